/** A partner's webhook endpoint per environment: registration, and what delivery needs of it. */
import { lookup } from 'node:dns/promises';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { ApiError } from '../api/errors';
import type { SecretBox } from '../auth/secret-box';
import { forbiddenAddress, secretProblem, urlProblems, type TargetPolicy } from './url-policy';
import { generateWebhookSecret, standardSecretProblem } from '../client/webhooks';
import { WebhookEndpoint } from '../db/entities/webhook-endpoint';
import { EventCounter } from '../db/entities/partner-event';
import { ROW_LOCK } from '../db/row-lock';

export interface EndpointView {
  url: string;
  enabled: boolean;
  updated_at: string;
  /** Only when it was generated, in the answer that generated it. */
  secret?: string;
}

/** What an endpoint's sealed secret is bound to (SecretBox's associated data). */
export const webhookSecretAad = (partnerId: string, environment: Environment) => `webhook:${partnerId}:${environment}`;
const aad = webhookSecretAad;

/** Resolves the URL's host and checks every address; returns the reasons it is refused. */
export async function resolvedAddressProblems(url: URL, policy: TargetPolicy): Promise<string[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  // One answer whether the name does not resolve or resolves to an address that is not public:
  // telling them apart would let anyone learn which names exist inside the deployment.
  const refused = [`${host} does not resolve to a public address`];
  try {
    addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return refused;
  }
  return addresses.some((a) => forbiddenAddress(a, policy)) ? refused : [];
}

/** How long a replaced secret keeps signing deliveries beside the new one (CONTRACT §7). */
export const PREVIOUS_SECRET_SIGNS_HOURS = 24;

/**
 * Registers or replaces the endpoint. Events recorded before registration are not pushed to a
 * new endpoint (they stay in /events); an endpoint replaced keeps its delivery position. Without
 * a secret, a `whsec_` one is generated and answered (once: only its sealed form is kept). A new
 * secret for an existing endpoint leaves the one it replaces signing too for 24 hours.
 */
export async function registerEndpoint(
  dataSource: DataSource,
  secretBox: SecretBox,
  input: { partnerId: string; environment: Environment; url: string; secret?: string },
  options: { allowLoopback: boolean },
): Promise<EndpointView> {
  const policy: TargetPolicy = { environment: input.environment, allowLoopback: options.allowLoopback };
  const secret = input.secret ?? generateWebhookSecret();
  const weak = secretProblem(secret, policy) ?? standardSecretProblem(secret);
  if (weak) throw new ApiError('validation_error', `body.secret: ${weak}`, [{ field: 'body.secret', issue: weak }]);
  const problems = urlProblems(input.url, policy);
  if (!problems.length) problems.push(...(await resolvedAddressProblems(new URL(input.url), policy)));
  if (problems.length) {
    throw new ApiError('validation_error', `url ${problems.join('; ')}`, problems.map((issue) => ({ field: 'body.url', issue })));
  }
  const key = { partnerId: input.partnerId, environment: input.environment };
  const sealed = secretBox.seal(secret, aad(input.partnerId, input.environment));
  const row = await dataSource.transaction(async (m) => {
    const endpoints = m.getRepository(WebhookEndpoint);
    // A first registration starts after the partner's last event. Two racing: the second finds
    // the first's row below (ON CONFLICT DO NOTHING) and replaces it under its row lock.
    const counter = await m.getRepository(EventCounter).findOneBy(key);
    const inserted = await endpoints
      .createQueryBuilder()
      .insert()
      .values({ ...key, url: input.url, secretSealed: sealed, enabled: true, deliveredThroughSeq: counter?.lastSeq ?? '0' })
      .orIgnore()
      .returning('partner_id')
      .execute();
    // RETURNING gives a row only when the insert happened (not when the conflict skipped it).
    if ((inserted.raw as unknown[]).length) return endpoints.findOneByOrFail(key);
    const current = await endpoints.createQueryBuilder('w').where('w.partner_id = :partnerId AND w.environment = :environment', key).setLock(ROW_LOCK).getOneOrFail();
    const replaced = secretBox.open(current.secretSealed, aad(input.partnerId, input.environment)) !== secret;
    await endpoints.update(key, {
      url: input.url,
      secretSealed: sealed,
      enabled: true,
      updatedAt: () => 'now()',
      ...(replaced ? { previousSecretSealed: current.secretSealed, previousSecretUntil: () => `now() + interval '${PREVIOUS_SECRET_SIGNS_HOURS} hours'` } : {}),
    });
    return endpoints.findOneByOrFail(key);
  });
  return { url: row.url, enabled: row.enabled, updated_at: row.updatedAt.toISOString(), ...(input.secret === undefined ? { secret } : {}) };
}

export interface DeliveryTarget {
  url: string;
  /** The endpoint's secret, then the one it replaced while that still signs. */
  secrets: string[];
  deliveredThroughSeq: number;
}

export async function deliveryTarget(dataSource: DataSource, secretBox: SecretBox, partnerId: string, environment: Environment): Promise<DeliveryTarget | undefined> {
  const row = await dataSource.getRepository(WebhookEndpoint).findOneBy({ partnerId, environment, enabled: true });
  if (!row) return undefined;
  const secrets = [secretBox.open(row.secretSealed, aad(partnerId, environment))];
  if (row.previousSecretSealed && row.previousSecretUntil && row.previousSecretUntil.getTime() > Date.now()) secrets.push(secretBox.open(row.previousSecretSealed, aad(partnerId, environment)));
  return { url: row.url, secrets, deliveredThroughSeq: Number(row.deliveredThroughSeq) };
}
