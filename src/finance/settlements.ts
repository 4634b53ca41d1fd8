/**
 * Settlements (CONTRACT §8): per partner, calendar month and currency, what its partner-collected
 * sales came to (sums never add two currencies: a month with sales in two has two rows). Open months are summed from the ledger on every read; closing a month snapshots
 * those sums under the settlement's row lock, after which nothing can book into it.
 */
import { LessThan, type DataSource, type EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { LedgerEntry } from '../db/entities/ledger-entry';
import { Settlement } from '../db/entities/settlement';
import { ACCOUNT } from './ledger';
import { periodStartOf } from './periods';
import { databaseNow } from '../db/clock';
import { CLOSE_GRACE_MS } from '../../workflows/messages';
import { ROW_LOCK } from '../db/row-lock';

export interface SettlementFigures {
  gross_sold_cents: number;
  commission_retained_cents: number;
  amount_owed_to_service_cents: number;
}

export interface SettlementView extends SettlementFigures {
  settlement_id: string;
  period_start: string;
  period_end: string;
  status: 'open' | 'closed';
  currency: string;
}

/** A settlement's key among a partner's: its month and currency. */
export const periodKey = (periodStart: string, currency: string) => `${periodStart} ${currency}`;

/** Sums over the ledger entries of each period and currency, for one partner; keyed by periodKey. */
export async function figuresFromLedger(
  manager: EntityManager,
  partnerId: string,
  environment: Environment,
  periods: Array<{ periodStart: string; currency: string }>,
): Promise<Map<string, SettlementFigures>> {
  const figures = new Map<string, SettlementFigures>(periods.map((p) => [periodKey(p.periodStart, p.currency), { gross_sold_cents: 0, commission_retained_cents: 0, amount_owed_to_service_cents: 0 }]));
  if (!periods.length) return figures;
  const periodStarts = [...new Set(periods.map((p) => p.periodStart))];
  const rows = await manager
    .getRepository(LedgerEntry)
    .createQueryBuilder('e')
    .innerJoin('ledger_postings', 'p', 'p.id = e.posting_id')
    .select("to_char(p.period_start, 'YYYY-MM-DD')", 'period')
    .addSelect('e.currency', 'currency')
    .addSelect(`coalesce(-sum(e.amount_cents) FILTER (WHERE e.account = :sales AND p.payment_model = 'partner_collected'), 0)`, 'gross')
    .addSelect('coalesce(sum(e.amount_cents) FILTER (WHERE e.account = :retained), 0)', 'retained')
    .addSelect('coalesce(sum(e.amount_cents) FILTER (WHERE e.account = :owed), 0)', 'owed')
    .where('p.partner_id = :partnerId AND p.environment = :environment AND p.period_start IN (:...periodStarts)', { partnerId, environment, periodStarts })
    .setParameters({ sales: ACCOUNT.sales, retained: ACCOUNT.partnerCommissionRetained, owed: ACCOUNT.partnerOwesService })
    .groupBy('p.period_start')
    .addGroupBy('e.currency')
    .getRawMany<{ period: string; currency: string; gross: string; retained: string; owed: string }>();
  for (const r of rows) {
    const key = periodKey(r.period, r.currency);
    if (!figures.has(key)) continue;
    figures.set(key, { gross_sold_cents: Number(r.gross), commission_retained_cents: Number(r.retained), amount_owed_to_service_cents: Number(r.owed) });
  }
  return figures;
}

function snapshot(s: Settlement): SettlementFigures {
  return { gross_sold_cents: s.grossSoldCents!, commission_retained_cents: s.commissionRetainedCents!, amount_owed_to_service_cents: s.amountOwedToServiceCents! };
}

/**
 * A partner's months that have ended are closed before they are listed, with the month-end
 * close's own grace (CLOSE_GRACE_MS after midnight UTC): a sale of the last minute before midnight
 * whose booking commits a few minutes after it still lands in its own month, whether the partner
 * polls /settlements then or not. Within that grace the ended month still shows `open`.
 */
export async function closeEndedMonthsOf(dataSource: DataSource, partnerId: string, environment: Environment, now?: Date): Promise<number> {
  const at = now ?? (await databaseNow(dataSource.manager));
  const endedBefore = periodStartOf(new Date(at.getTime() - CLOSE_GRACE_MS));
  const pending = await dataSource.getRepository(Settlement).existsBy({ partnerId, environment, status: 'open', periodStart: LessThan(endedBefore) });
  return pending ? closeSettlements(dataSource, endedBefore, undefined, { partnerId, environment }) : 0;
}

/** Newest period first, then by currency; keyset-paginated on (period_start, currency). */
export async function listSettlements(
  dataSource: DataSource,
  partnerId: string,
  environment: Environment,
  page: { limit: number; after?: { periodStart: string; currency: string }; currency?: string },
): Promise<{ data: SettlementView[]; next: { periodStart: string; currency: string } | null }> {
  const q = dataSource.getRepository(Settlement).createQueryBuilder('s').where('s.partner_id = :partnerId AND s.environment = :environment', { partnerId, environment });
  if (page.currency) q.andWhere('s.currency = :currency', { currency: page.currency });
  if (page.after) q.andWhere('(s.period_start < :p OR (s.period_start = :p AND s.currency > :c))', { p: page.after.periodStart, c: page.after.currency });
  const rows = await q.orderBy('s.period_start', 'DESC').addOrderBy('s.currency', 'ASC').limit(page.limit + 1).getMany();
  const shown = rows.slice(0, page.limit);
  const live = await figuresFromLedger(dataSource.manager, partnerId, environment, shown.filter((s) => s.status === 'open'));
  return {
    data: shown.map((s) => ({
      settlement_id: s.publicId,
      period_start: s.periodStart,
      period_end: s.periodEnd,
      status: s.status,
      ...(s.status === 'closed' ? snapshot(s) : live.get(periodKey(s.periodStart, s.currency))!),
      currency: s.currency,
    })),
    next: rows.length > page.limit ? { periodStart: shown[shown.length - 1].periodStart, currency: shown[shown.length - 1].currency } : null,
  };
}

/**
 * Closes every open settlement of a period before `before` (a month start): the month-end run,
 * and its catch-up after a worker was down over a month end. Returns how many it closed.
 * `onEach` runs before each settlement (the activity heartbeats there, and may stop).
 */
export async function closeSettlements(
  dataSource: DataSource,
  before: string,
  onEach: () => void = () => undefined,
  /** Only this partner's (in one environment); every partner's when absent. */
  only?: { partnerId: string; environment: Environment },
): Promise<number> {
  const due = await dataSource.getRepository(Settlement).find({ select: { id: true }, where: { status: 'open', periodStart: LessThan(before), ...(only ?? {}) }, order: { periodStart: 'ASC' } });
  let closed = 0;
  for (const { id } of due) {
    onEach();
    const done = await dataSource.transaction(async (tx) => {
      const s = await tx.getRepository(Settlement).createQueryBuilder('s').setLock(ROW_LOCK).where('s.id = :id', { id }).getOneOrFail();
      if (s.status !== 'open' || s.periodStart >= before) return false;
      const figures = (await figuresFromLedger(tx, s.partnerId, s.environment, [s])).get(periodKey(s.periodStart, s.currency))!;
      await tx.getRepository(Settlement).update(
        { id },
        {
          status: 'closed',
          closedAt: () => 'now()',
          grossSoldCents: figures.gross_sold_cents,
          commissionRetainedCents: figures.commission_retained_cents,
          amountOwedToServiceCents: figures.amount_owed_to_service_cents,
        },
      );
      return true;
    });
    if (done) closed++;
  }
  return closed;
}
