/** Partners: who sells through the API, on what terms (CONTRACT §8). */
import type { DataSource } from 'typeorm';
import { DEFAULT_COMMISSION_BPS, Partner } from '../db/entities/partner';

export interface PartnerTerms {
  merchantOfRecord?: boolean;
  commissionPartnerCollectedBps?: number;
  commissionServiceCollectedBps?: number;
  commissionBrokerageBps?: number;
  commissionReferralBps?: number;
  affiliateAccountId?: string | null;
  contactEmail?: string | null;
}

export async function findPartnerByName(dataSource: DataSource, name: string): Promise<Partner | undefined> {
  return (await dataSource.getRepository(Partner).findOne({ where: { name } })) ?? undefined;
}

/** Creates a partner; terms not given take the documented defaults (merchant of record, no affiliate account). */
export async function createPartner(dataSource: DataSource, name: string, terms: PartnerTerms = {}): Promise<Partner> {
  const repo = dataSource.getRepository(Partner);
  return repo.save(
    repo.create({
      name,
      merchantOfRecord: terms.merchantOfRecord ?? true,
      commissionPartnerCollectedBps: terms.commissionPartnerCollectedBps ?? DEFAULT_COMMISSION_BPS.partnerCollected,
      commissionServiceCollectedBps: terms.commissionServiceCollectedBps ?? DEFAULT_COMMISSION_BPS.serviceCollected,
      commissionBrokerageBps: terms.commissionBrokerageBps ?? DEFAULT_COMMISSION_BPS.brokerage,
      commissionReferralBps: terms.commissionReferralBps ?? DEFAULT_COMMISSION_BPS.referral,
      affiliateAccountId: terms.affiliateAccountId ?? null,
      contactEmail: terms.contactEmail ?? null,
    }),
  );
}

/** The partner of that name, created with default terms when it does not exist yet (race-safe). */
export async function findOrCreatePartner(dataSource: DataSource, name: string): Promise<{ partner: Partner; created: boolean }> {
  const existing = await findPartnerByName(dataSource, name);
  if (existing) return { partner: existing, created: false };
  await dataSource
    .getRepository(Partner)
    .createQueryBuilder()
    .insert()
    .values({
      name,
      commissionPartnerCollectedBps: DEFAULT_COMMISSION_BPS.partnerCollected,
      commissionServiceCollectedBps: DEFAULT_COMMISSION_BPS.serviceCollected,
      commissionBrokerageBps: DEFAULT_COMMISSION_BPS.brokerage,
      commissionReferralBps: DEFAULT_COMMISSION_BPS.referral,
    })
    .orIgnore()
    .execute();
  const partner = await findPartnerByName(dataSource, name);
  if (!partner) throw new Error(`partner ${name} vanished while being created`);
  return { partner, created: true };
}

/**
 * Changes a partner's terms from now on. Sales already recorded keep the rate fixed on them, so
 * no past figure changes.
 */
export async function updatePartner(dataSource: DataSource, name: string, terms: PartnerTerms): Promise<Partner | undefined> {
  const repo = dataSource.getRepository(Partner);
  const partner = await findPartnerByName(dataSource, name);
  if (!partner) return undefined;
  const changes = Object.fromEntries(Object.entries(terms).filter(([, v]) => v !== undefined)) as Partial<Partner>;
  if (Object.keys(changes).length) await repo.update({ id: partner.id }, changes);
  return repo.findOneByOrFail({ id: partner.id });
}

export async function listPartners(dataSource: DataSource): Promise<Partner[]> {
  return dataSource.getRepository(Partner).find({ order: { createdAt: 'ASC' } });
}
