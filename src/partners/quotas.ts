/**
 * Quotas (CONTRACT §15): per partner and environment, at most so many active quotes (a quote
 * reserves a name: a partner must not hoard the inventory) and open brokerage cases (each is a
 * workflow and a broker's work). Beyond it: 429 `quota_exceeded` with `Retry-After` (seconds
 * until the partner's oldest active quote expires; an hour for cases). The defaults are settings
 * (QUOTA_*); `admin partner quota` raises them for one partner.
 *
 * Checked twice: cheaply before any work (no workflow is started for a refused request), and
 * again inside the transaction that records the quote or case, under the partner's row lock, so
 * two requests racing at the limit cannot both pass.
 */
import { In, Not, type DataSource, type EntityManager } from 'typeorm';
import { ApiError } from '../api/errors';
import type { Environment, QuotaDefaults } from '../config';
import { BrokerageCase } from '../db/entities/brokerage-case';
import { Partner } from '../db/entities/partner';
import { PartnerQuota } from '../db/entities/partner-quota';
import { Quote } from '../db/entities/quote';
import { FINAL_CASE_STATUSES } from '../../workflows/brokerage-messages';
import { ROW_LOCK } from '../db/row-lock';

export const CASE_QUOTA_RETRY_AFTER_SECONDS = 3600;

export interface Quotas {
  active_quotes: number;
  open_cases: number;
}

/**
 * The partner's row lock: a partner's quota checks and the quote or case recorded after them take
 * turns (ROW_LOCK: rows that only reference the partner are written meanwhile).
 */
async function lockPartner(manager: EntityManager, partnerId: string): Promise<void> {
  await manager.getRepository(Partner).createQueryBuilder('p').setLock(ROW_LOCK).where('p.id = :partnerId', { partnerId }).getOneOrFail();
}

/** The partner's quotas in an environment: its own where an operator set them, else the defaults. */
export async function quotasOf(manager: EntityManager, defaults: QuotaDefaults, partnerId: string, environment: Environment): Promise<Quotas> {
  const own = await manager.getRepository(PartnerQuota).findOneBy({ partnerId, environment });
  return { active_quotes: own?.activeQuotes ?? defaults.activeQuotes[environment], open_cases: own?.openCases ?? defaults.openCases[environment] };
}

/** Refuses a new quote when the partner holds its quota of active ones; `lock` serialises the partner's quotes (inside the recording transaction). */
export async function checkQuoteQuota(manager: EntityManager, defaults: QuotaDefaults, partnerId: string, environment: Environment, lock = false): Promise<void> {
  if (lock) await lockPartner(manager, partnerId);
  const { active_quotes: limit } = await quotasOf(manager, defaults, partnerId, environment);
  const active = await manager.getRepository(Quote).find({
    select: { expiresAt: true },
    where: { partnerId, environment, status: 'active' },
    order: { expiresAt: 'ASC' },
    take: limit,
  });
  if (active.length < limit) return;
  const retryAfter = Math.max(1, Math.ceil((active[0].expiresAt.getTime() - Date.now()) / 1000));
  throw new ApiError('quota_exceeded', `this credential's partner holds ${limit} active quotes in ${environment}, its quota: order or let one expire first (an operator can raise it)`, undefined, { 'Retry-After': String(retryAfter) });
}

/** Refuses a new brokerage case when the partner holds its quota of open ones. */
export async function checkCaseQuota(manager: EntityManager, defaults: QuotaDefaults, partnerId: string, environment: Environment, lock = false): Promise<void> {
  if (lock) await lockPartner(manager, partnerId);
  const { open_cases: limit } = await quotasOf(manager, defaults, partnerId, environment);
  const open = await manager.getRepository(BrokerageCase).count({ where: { partnerId, environment, status: Not(In([...FINAL_CASE_STATUSES])) } });
  if (open < limit) return;
  throw new ApiError('quota_exceeded', `this credential's partner has ${limit} open brokerage cases in ${environment}, its quota (an operator can raise it)`, undefined, { 'Retry-After': String(CASE_QUOTA_RETRY_AFTER_SECONDS) });
}

/** An operator sets a partner's quotas (undefined keeps the current one); answers the quotas now in force. */
export async function setQuotas(dataSource: DataSource, defaults: QuotaDefaults, partnerId: string, environment: Environment, change: { activeQuotes?: number; openCases?: number }): Promise<Quotas> {
  const repo = dataSource.getRepository(PartnerQuota);
  const current = await repo.findOneBy({ partnerId, environment });
  await repo.upsert(
    { partnerId, environment, activeQuotes: change.activeQuotes ?? current?.activeQuotes ?? null, openCases: change.openCases ?? current?.openCases ?? null },
    ['partnerId', 'environment'],
  );
  return quotasOf(dataSource.manager, defaults, partnerId, environment);
}
