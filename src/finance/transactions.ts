/**
 * GET /transactions (CONTRACT §8): every sale through the partner, filtered, newest first, with
 * totals over the whole filtered set. Each row's gross and commission are those of its sale
 * posting and its status follows its reversal posting (reconcile checks both), so the totals,
 * summed here in one pass over the partner's index, agree with the ledger.
 */
import type { DataSource, SelectQueryBuilder } from 'typeorm';
import type { Environment } from '../config';
import { SaleTransaction, type TransactionPaymentModel } from '../db/entities/sale-transaction';

export interface TransactionFilter {
  from?: Date;
  to?: Date;
  status?: 'completed' | 'reversed';
  paymentModel?: TransactionPaymentModel;
  /** Rows and totals are this currency's (sums never add two). */
  currency: string;
}

export interface TransactionView {
  transaction_id: string;
  order_id: string | null;
  domain: string;
  payment_model: TransactionPaymentModel;
  status: 'completed' | 'reversed';
  gross_cents: number;
  commission_cents: number;
  currency: string;
  occurred_at: string;
  /** When the sale was undone; null while it stands. Its reversal is booked in that month, or the next open one. */
  reversed_at: string | null;
  /** The settlement month (its first day) that holds the sale's booking. */
  settlement_period: string;
}

function filtered(dataSource: DataSource, partnerId: string, environment: Environment, f: TransactionFilter): SelectQueryBuilder<SaleTransaction> {
  const q = dataSource
    .getRepository(SaleTransaction)
    .createQueryBuilder('t')
    .where('t.partner_id = :partnerId AND t.environment = :environment AND t.currency = :currency', { partnerId, environment, currency: f.currency });
  if (f.from) q.andWhere('t.occurred_at >= :from', { from: f.from });
  if (f.to) q.andWhere('t.occurred_at < :to', { to: f.to });
  if (f.status) q.andWhere('t.status = :status', { status: f.status });
  if (f.paymentModel) q.andWhere('t.payment_model = :paymentModel', { paymentModel: f.paymentModel });
  return q;
}

export async function transactionTotals(dataSource: DataSource, partnerId: string, environment: Environment, f: TransactionFilter) {
  const row = await filtered(dataSource, partnerId, environment, f)
    .select('count(*)', 'count')
    .addSelect(`coalesce(sum(t.gross_cents) FILTER (WHERE t.status = 'completed'), 0)`, 'gmv')
    .addSelect(`coalesce(sum(t.commission_cents) FILTER (WHERE t.status = 'completed'), 0)`, 'commission')
    .getRawOne<{ count: string; gmv: string; commission: string }>();
  return { count: Number(row!.count), gmv_cents: Number(row!.gmv), commission_cents: Number(row!.commission), currency: f.currency };
}

export async function listTransactions(
  dataSource: DataSource,
  partnerId: string,
  environment: Environment,
  f: TransactionFilter,
  page: { limit: number; cursor?: { at: string; id: string } },
): Promise<{ data: TransactionView[]; next: { at: string; id: string } | null }> {
  const q = filtered(dataSource, partnerId, environment, f)
    .leftJoin('orders', 'o', 'o.id = t.order_id')
    .addSelect('o.public_id', 'order_public_id')
    .leftJoin('ledger_postings', 'sp', "sp.transaction_id = t.id AND sp.kind = 'sale'")
    .addSelect("to_char(sp.period_start, 'YYYY-MM-DD')", 'settlement_period')
    .addSelect(`to_char(t.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`, 'cursor_at');
  if (page.cursor) q.andWhere('(t.occurred_at, t.id) < (CAST(:at AS timestamptz), CAST(:id AS uuid))', { at: page.cursor.at, id: page.cursor.id });
  const { entities, raw } = await q
    .orderBy('t.occurred_at', 'DESC')
    .addOrderBy('t.id', 'DESC')
    .limit(page.limit + 1)
    .getRawAndEntities<{ order_public_id: string | null; cursor_at: string; settlement_period: string }>();
  const shown = entities.slice(0, page.limit);
  return {
    data: shown.map((t, i) => ({
      transaction_id: t.publicId,
      order_id: raw[i].order_public_id,
      domain: t.domain,
      payment_model: t.paymentModel,
      status: t.status,
      gross_cents: t.grossCents,
      commission_cents: t.commissionCents,
      currency: t.currency,
      occurred_at: t.occurredAt.toISOString(),
      reversed_at: t.reversedAt ? t.reversedAt.toISOString() : null,
      settlement_period: raw[i].settlement_period,
    })),
    next: entities.length > page.limit ? { at: raw[page.limit - 1].cursor_at, id: shown[shown.length - 1].id } : null,
  };
}
