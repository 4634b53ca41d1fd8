/**
 * Settlements (CONTRACT §8): per partner and calendar month, what its partner-collected sales
 * came to. Open months are summed from the ledger on every read; closing a month snapshots
 * those sums under the settlement's row lock, after which nothing can book into it.
 */
import { LessThan, type DataSource, type EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { LedgerEntry } from '../db/entities/ledger-entry';
import { Settlement } from '../db/entities/settlement';
import { ACCOUNT } from './ledger';

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

/** Sums over the ledger entries of each period, for one partner. */
export async function figuresFromLedger(manager: EntityManager, partnerId: string, environment: Environment, periodStarts: string[]): Promise<Map<string, SettlementFigures>> {
  const figures = new Map<string, SettlementFigures>(periodStarts.map((p) => [p, { gross_sold_cents: 0, commission_retained_cents: 0, amount_owed_to_service_cents: 0 }]));
  if (!periodStarts.length) return figures;
  const rows = await manager
    .getRepository(LedgerEntry)
    .createQueryBuilder('e')
    .innerJoin('ledger_postings', 'p', 'p.id = e.posting_id')
    .select("to_char(p.period_start, 'YYYY-MM-DD')", 'period')
    .addSelect(`coalesce(-sum(e.amount_cents) FILTER (WHERE e.account = :sales AND p.payment_model = 'partner_collected'), 0)`, 'gross')
    .addSelect('coalesce(sum(e.amount_cents) FILTER (WHERE e.account = :retained), 0)', 'retained')
    .addSelect('coalesce(sum(e.amount_cents) FILTER (WHERE e.account = :owed), 0)', 'owed')
    .where('p.partner_id = :partnerId AND p.environment = :environment AND p.period_start IN (:...periodStarts)', { partnerId, environment, periodStarts })
    .setParameters({ sales: ACCOUNT.sales, retained: ACCOUNT.partnerCommissionRetained, owed: ACCOUNT.partnerOwesService })
    .groupBy('p.period_start')
    .getRawMany<{ period: string; gross: string; retained: string; owed: string }>();
  for (const r of rows) {
    figures.set(r.period, { gross_sold_cents: Number(r.gross), commission_retained_cents: Number(r.retained), amount_owed_to_service_cents: Number(r.owed) });
  }
  return figures;
}

function snapshot(s: Settlement): SettlementFigures {
  return { gross_sold_cents: s.grossSoldCents!, commission_retained_cents: s.commissionRetainedCents!, amount_owed_to_service_cents: s.amountOwedToServiceCents! };
}

/** Newest period first, keyset-paginated on period_start. */
export async function listSettlements(
  dataSource: DataSource,
  partnerId: string,
  environment: Environment,
  page: { limit: number; before?: string },
): Promise<{ data: SettlementView[]; next: string | null }> {
  const q = dataSource.getRepository(Settlement).createQueryBuilder('s').where('s.partner_id = :partnerId AND s.environment = :environment', { partnerId, environment });
  if (page.before) q.andWhere('s.period_start < :before', { before: page.before });
  const rows = await q.orderBy('s.period_start', 'DESC').limit(page.limit + 1).getMany();
  const shown = rows.slice(0, page.limit);
  const live = await figuresFromLedger(dataSource.manager, partnerId, environment, shown.filter((s) => s.status === 'open').map((s) => s.periodStart));
  return {
    data: shown.map((s) => ({
      settlement_id: s.publicId,
      period_start: s.periodStart,
      period_end: s.periodEnd,
      status: s.status,
      ...(s.status === 'closed' ? snapshot(s) : live.get(s.periodStart)!),
      currency: s.currency,
    })),
    next: rows.length > page.limit ? shown[shown.length - 1].periodStart : null,
  };
}

/**
 * Closes every open settlement of a period before `before` (a month start): the month-end run,
 * and its catch-up after a worker was down over a month end. Returns how many it closed.
 * `onEach` runs before each settlement (the activity heartbeats there, and may stop).
 */
export async function closeSettlements(dataSource: DataSource, before: string, onEach: () => void = () => undefined): Promise<number> {
  const due = await dataSource.getRepository(Settlement).find({ select: { id: true }, where: { status: 'open', periodStart: LessThan(before) }, order: { periodStart: 'ASC' } });
  let closed = 0;
  for (const { id } of due) {
    onEach();
    const done = await dataSource.transaction(async (tx) => {
      const s = await tx.getRepository(Settlement).createQueryBuilder('s').setLock('pessimistic_write').where('s.id = :id', { id }).getOneOrFail();
      if (s.status !== 'open' || s.periodStart >= before) return false;
      const figures = (await figuresFromLedger(tx, s.partnerId, s.environment, [s.periodStart])).get(s.periodStart)!;
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
