/** Tracking links (CONTRACT §11): created by partners linked to an affiliate account. */
import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { ApiError } from '../api/errors';
import { Domain } from '../db/entities/domain';
import { Partner } from '../db/entities/partner';
import { ReferralLink, type LinkKind } from '../db/entities/referral';
import { publicId } from '../ids';

export const PRODUCTS = ['brokerage'] as const;

/** Every referral endpoint: a credential whose partner has no affiliate account gets 403. */
export async function requireAffiliate(dataSource: DataSource, partnerId: string): Promise<void> {
  const partner = await dataSource.getRepository(Partner).findOne({ select: { id: true, affiliateAccountId: true }, where: { id: partnerId } });
  if (!partner?.affiliateAccountId) throw new ApiError('affiliate_account_required', 'this credential is not linked to an affiliate account; ask us to link one');
}

/** The public URL of a link: short, unguessable code, on this service's origin. */
export function linkUrl(baseUrl: string, link: ReferralLink): string {
  return `${baseUrl.replace(/\/$/, '')}/r/${link.code}`;
}

/** Where a link lands: the domain's page, the marketplace's search, or a product page. */
export function landingPath(link: Pick<ReferralLink, 'kind' | 'domain' | 'product' | 'environment'>): string {
  const env = link.environment === 'sandbox' ? '?env=sandbox' : '';
  if (link.kind === 'domain') return `/d/${encodeURIComponent(link.domain!)}${env}`;
  if (link.kind === 'product') return `/${link.product}${env}`;
  return `/search${env}`;
}

export async function createLink(
  dataSource: DataSource,
  input: { partnerId: string; environment: Environment; kind: LinkKind; domain?: string; product?: string; campaign?: string },
): Promise<ReferralLink> {
  const problems: Array<{ field: string; issue: string }> = [];
  if (input.kind === 'domain' && !input.domain) problems.push({ field: 'body.domain', issue: 'required for a domain link' });
  if (input.kind !== 'domain' && input.domain) problems.push({ field: 'body.domain', issue: 'only for a domain link' });
  if (input.kind === 'product' && !input.product) problems.push({ field: 'body.product', issue: `required for a product link (${PRODUCTS.join(', ')})` });
  if (input.kind !== 'product' && input.product) problems.push({ field: 'body.product', issue: 'only for a product link' });
  if (problems.length) throw new ApiError('validation_error', problems.map((p) => `${p.field} ${p.issue}`).join('; '), problems);
  if (input.domain && !(await dataSource.getRepository(Domain).existsBy({ environment: input.environment, name: input.domain }))) {
    throw new ApiError('not_found', `${input.domain} is not in the ${input.environment} inventory`);
  }
  const links = dataSource.getRepository(ReferralLink);
  return links.save(
    links.create({
      publicId: publicId('lnk'),
      code: randomBytes(9).toString('base64url'),
      partnerId: input.partnerId,
      environment: input.environment,
      kind: input.kind,
      domain: input.domain ?? null,
      product: input.product ?? null,
      campaign: input.campaign ?? null,
    }),
  );
}
