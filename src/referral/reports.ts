/**
 * What a referring partner reads (CONTRACT §11): links with their numbers, clicks, sales,
 * commission lines with the running balance, payouts and the funnel. Every figure is a count or
 * a sum of the underlying rows and ledger entries, computed on each read.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { LedgerEntry } from '../db/entities/ledger-entry';
import { LedgerPosting } from '../db/entities/ledger-posting';
import { Payout, PayoutLine } from '../db/entities/payout';
import { ReferralCheckout, ReferralClick, ReferralLink, ReferralSale } from '../db/entities/referral';
import { ACCOUNT } from '../finance/ledger';

/**
 * The currency a report is in when the partner names none. Sums never add two currencies
 * (CONTRACT §8): every money figure below is one currency's; counts (clicks, checkouts, sales)
 * count every currency.
 */
export const REFERRAL_CURRENCY = 'USD';

export interface Window {
  from?: Date;
  to?: Date;
}

/** `j***@example.com`: enough for the partner to recognise a sale, not to contact the buyer. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at < 1) return '***';
  return `${email[0]}***${email.slice(at)}`;
}

/** Sales whose commission was not reversed, by id. */
async function reversedSaleIds(dataSource: DataSource, partnerId: string, environment: Environment): Promise<Set<string>> {
  const rows = await dataSource.getRepository(LedgerPosting).find({ select: { referralSaleId: true }, where: { partnerId, environment, kind: 'referral_reversed' } });
  return new Set(rows.map((r) => r.referralSaleId!));
}

export async function clickTotals(dataSource: DataSource, partnerId: string, environment: Environment, w: Window, linkId?: string) {
  const q = dataSource
    .getRepository(ReferralClick)
    .createQueryBuilder('c')
    .select('coalesce(sum(c.clicks), 0)', 'clicks')
    .addSelect('count(*)', 'unique_clicks')
    .where('c.partner_id = :partnerId AND c.environment = :environment', { partnerId, environment });
  if (w.from) q.andWhere('c.first_clicked_at >= :from', { from: w.from });
  if (w.to) q.andWhere('c.first_clicked_at < :to', { to: w.to });
  if (linkId) q.andWhere('c.link_id = :linkId', { linkId });
  const row = (await q.getRawOne<{ clicks: string; unique_clicks: string }>())!;
  return { clicks: Number(row.clicks), unique_clicks: Number(row.unique_clicks) };
}

export async function linkStats(dataSource: DataSource, partnerId: string, environment: Environment, links: ReferralLink[], currency: string) {
  if (!links.length) return [];
  const ids = links.map((l) => l.id);
  const clicks = await dataSource
    .getRepository(ReferralClick)
    .createQueryBuilder('c')
    .select('c.link_id', 'link_id')
    .addSelect('sum(c.clicks)', 'clicks')
    .where('c.partner_id = :partnerId AND c.environment = :environment AND c.link_id IN (:...ids)', { partnerId, environment, ids })
    .groupBy('c.link_id')
    .getRawMany<{ link_id: string; clicks: string }>();
  const sales = await dataSource
    .getRepository(ReferralSale)
    .createQueryBuilder('s')
    .leftJoin(LedgerPosting, 'r', "r.referral_sale_id = s.id AND r.kind = 'referral_reversed'")
    .select('s.link_id', 'link_id')
    .addSelect('count(*)', 'sales')
    .addSelect('coalesce(sum(s.commission_cents) FILTER (WHERE r.id IS NULL AND s.currency = :currency), 0)', 'commission')
    .where('s.partner_id = :partnerId AND s.environment = :environment AND s.link_id IN (:...ids)', { partnerId, environment, ids, currency })
    .groupBy('s.link_id')
    .getRawMany<{ link_id: string; sales: string; commission: string }>();
  return links.map((link) => {
    const sold = sales.find((r) => r.link_id === link.id);
    return { clicks: Number(clicks.find((c) => c.link_id === link.id)?.clicks ?? 0), sales: Number(sold?.sales ?? 0), commission_cents: Number(sold?.commission ?? 0), currency };
  });
}

/** The referred sales in one currency, newest first. */
export async function listSales(dataSource: DataSource, partnerId: string, environment: Environment, currency: string) {
  const reversed = await reversedSaleIds(dataSource, partnerId, environment);
  const accrued = new Set(
    (await dataSource.getRepository(LedgerPosting).find({ select: { referralSaleId: true }, where: { partnerId, environment, kind: 'referral_accrued' } })).map((r) => r.referralSaleId!),
  );
  const rows = await dataSource
    .getRepository(ReferralSale)
    .createQueryBuilder('s')
    .leftJoin('orders', 'o', 'o.id = s.order_id')
    .addSelect('o.public_id', 'order_public_id')
    .where('s.partner_id = :partnerId AND s.environment = :environment AND s.currency = :currency', { partnerId, environment, currency })
    .orderBy('s.occurred_at', 'DESC')
    .addOrderBy('s.id', 'DESC')
    .getRawAndEntities<{ order_public_id: string }>();
  return rows.entities.map((s, i) => ({
    sale_id: s.publicId,
    order_id: rows.raw[i].order_public_id,
    buyer: maskEmail(s.buyerEmail),
    domain: s.domain,
    amount_cents: s.amountCents,
    commission_cents: s.commissionCents,
    commission_status: (reversed.has(s.id) ? 'reversed' : accrued.has(s.id) ? 'accrued' : 'pending') as 'pending' | 'accrued' | 'reversed',
    currency: s.currency,
    occurred_at: s.occurredAt.toISOString(),
  }));
}

export interface CommissionLine {
  line_id: string;
  kind: 'pending' | 'accrued' | 'reversed' | 'paid_out';
  amount_cents: number;
  balance_cents: number;
  currency: string;
  sale_id?: string;
  payout_id?: string;
  created_at: string;
}

/**
 * Every commission line in one currency, oldest first, each with the payable balance after it:
 * sums over the referral postings' entries (and, for paid_out, over the referral lines a payout
 * took in that currency).
 */
export async function commissionLines(dataSource: DataSource, partnerId: string, environment: Environment, currency: string): Promise<{ lines: CommissionLine[]; balance_cents: number; pending_cents: number }> {
  const postings = await dataSource
    .getRepository(LedgerEntry)
    .createQueryBuilder('e')
    .innerJoin(LedgerPosting, 'p', 'p.id = e.posting_id')
    .innerJoin(ReferralSale, 's', 's.id = p.referral_sale_id')
    .select('p.id', 'posting_id')
    .addSelect('p.kind', 'kind')
    .addSelect('p.occurred_at', 'at')
    .addSelect('s.public_id', 'sale_id')
    .addSelect('max(s.commission_cents)', 'commission')
    .addSelect('coalesce(-sum(e.amount_cents) FILTER (WHERE e.account = :payable), 0)', 'payable')
    .addSelect('coalesce(-sum(e.amount_cents) FILTER (WHERE e.account = :pending), 0)', 'pending')
    .where('p.partner_id = :partnerId AND p.environment = :environment AND e.currency = :currency', { partnerId, environment, currency })
    .setParameters({ payable: ACCOUNT.serviceOwesPartner, pending: ACCOUNT.referralCommissionPending })
    .groupBy('p.id')
    .addGroupBy('s.public_id')
    .getRawMany<{ posting_id: string; kind: string; at: Date; sale_id: string; commission: string; payable: string; pending: string }>();
  const paid = await paidReferralLines(dataSource, partnerId, environment, currency);
  const payouts = [...new Set(paid.map((l) => l.payout_posting_id))].map((postingId) => {
    const mine = paid.filter((l) => l.payout_posting_id === postingId);
    return { posting_id: postingId, payout_id: mine[0].payout_id, at: mine[0].paid_at, paid: String(mine.reduce((sum, l) => sum + l.amount, 0)) };
  });

  type Step = { order: bigint; line: Omit<CommissionLine, 'balance_cents' | 'currency'>; delta: number };
  const steps: Step[] = [
    ...postings.map((p): Step => {
      const kind = p.kind === 'referral_pending' ? 'pending' : p.kind === 'referral_accrued' ? 'accrued' : 'reversed';
      const commission = Number(p.commission);
      return {
        order: BigInt(p.posting_id),
        line: { line_id: `cl_${p.posting_id}`, kind, amount_cents: kind === 'reversed' ? -commission : commission, sale_id: p.sale_id, created_at: new Date(p.at).toISOString() },
        delta: Number(p.payable),
      };
    }),
    ...payouts.map((p): Step => ({
      order: BigInt(p.posting_id),
      line: { line_id: `cl_${p.posting_id}`, kind: 'paid_out', amount_cents: -Number(p.paid), payout_id: p.payout_id, created_at: new Date(p.at).toISOString() },
      delta: -Number(p.paid),
    })),
  ].sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
  let balance = 0;
  const lines = steps.map((s) => {
    balance += s.delta;
    return { ...s.line, balance_cents: balance, currency };
  });
  const pending = postings.reduce((sum, p) => sum + Number(p.pending), 0);
  return { lines, balance_cents: balance, pending_cents: pending };
}

/**
 * What payouts took of the partner's referral lines: one row per payout, referred sale and line
 * kind, with the amount it paid (its `service_owes_partner` entries, debit positive).
 */
async function paidReferralLines(dataSource: DataSource, partnerId: string, environment: Environment, currency: string) {
  const rows = await dataSource
    .getRepository(LedgerEntry)
    .createQueryBuilder('e')
    .innerJoin(PayoutLine, 'l', 'l.posting_id = e.posting_id')
    .innerJoin(LedgerPosting, 'p', 'p.id = e.posting_id AND p.referral_sale_id IS NOT NULL')
    .innerJoin(ReferralSale, 's', 's.id = p.referral_sale_id')
    .innerJoin(Payout, 'po', 'po.id = l.payout_id')
    .innerJoin(LedgerPosting, 'pp', "pp.payout_id = po.id AND pp.kind = 'payout'")
    .select('pp.id', 'payout_posting_id')
    .addSelect('po.public_id', 'payout_id')
    .addSelect('po.paid_at', 'paid_at')
    .addSelect('po.currency', 'currency')
    .addSelect('s.public_id', 'sale_id')
    .addSelect('p.kind', 'kind')
    .addSelect('-sum(e.amount_cents)', 'amount')
    .where('e.account = :payable AND po.partner_id = :partnerId AND po.environment = :environment AND po.currency = :currency', { payable: ACCOUNT.serviceOwesPartner, partnerId, environment, currency })
    .groupBy('pp.id')
    .addGroupBy('po.public_id')
    .addGroupBy('po.paid_at')
    .addGroupBy('po.currency')
    .addGroupBy('s.public_id')
    .addGroupBy('p.kind')
    .orderBy('po.paid_at', 'DESC')
    .getRawMany<{ payout_posting_id: string; payout_id: string; paid_at: Date; currency: string; sale_id: string; kind: string; amount: string }>();
  return rows.map((r) => ({ ...r, amount: Number(r.amount) }));
}

/** Payouts in one currency that paid referral commission: each with the referral lines it took. */
export async function referralPayouts(dataSource: DataSource, partnerId: string, environment: Environment, currency: string) {
  const byPayout = new Map<string, { payout_id: string; paid_at: string; amount_cents: number; currency: string; lines: Array<{ sale_id: string; kind: string; amount_cents: number; currency: string }> }>();
  for (const r of await paidReferralLines(dataSource, partnerId, environment, currency)) {
    const p = byPayout.get(r.payout_id) ?? { payout_id: r.payout_id, paid_at: new Date(r.paid_at).toISOString(), amount_cents: 0, currency: r.currency, lines: [] };
    p.lines.push({ sale_id: r.sale_id, kind: r.kind === 'referral_accrued' ? 'accrued' : 'reversed', amount_cents: r.amount, currency: r.currency });
    p.amount_cents += r.amount;
    byPayout.set(r.payout_id, p);
  }
  const data = [...byPayout.values()];
  return { data, total_paid_cents: data.reduce((sum, p) => sum + p.amount_cents, 0) };
}

type Row = { day: string; clicks?: string; unique?: string; checkouts?: string; sales?: string; gmv?: string; commission?: string };

/**
 * The funnel over a window, and per UTC day: counted and summed by Postgres, one query per table.
 * Counts take every currency; GMV and commission are `currency`'s.
 */
export async function analytics(dataSource: DataSource, partnerId: string, environment: Environment, w: Window, currency: string) {
  const scope = { partnerId, environment, from: w.from ?? new Date(0), to: w.to ?? new Date('9999-12-31T00:00:00Z'), currency };
  const clickRows = await dataSource
    .getRepository(ReferralClick)
    .createQueryBuilder('c')
    .select("to_char(c.day, 'YYYY-MM-DD')", 'day')
    .addSelect('sum(c.clicks)', 'clicks')
    .addSelect('count(*)', 'unique')
    .where('c.partner_id = :partnerId AND c.environment = :environment AND c.first_clicked_at >= :from AND c.first_clicked_at < :to', scope)
    .groupBy('c.day')
    .getRawMany<Row>();
  const checkoutRows = await dataSource
    .getRepository(ReferralCheckout)
    .createQueryBuilder('k')
    .select("to_char(k.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')", 'day')
    .addSelect('count(*)', 'checkouts')
    .where('k.partner_id = :partnerId AND k.environment = :environment AND k.started_at >= :from AND k.started_at < :to', scope)
    .groupBy('1')
    .getRawMany<Row>();
  // A refunded sale stays a sale of the funnel, but neither its amount nor its commission counts.
  const saleRows = await dataSource
    .getRepository(ReferralSale)
    .createQueryBuilder('s')
    .leftJoin(LedgerPosting, 'r', "r.referral_sale_id = s.id AND r.kind = 'referral_reversed'")
    .select("to_char(s.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')", 'day')
    .addSelect('count(*)', 'sales')
    .addSelect('coalesce(sum(s.amount_cents) FILTER (WHERE r.id IS NULL AND s.currency = :currency), 0)', 'gmv')
    .addSelect('coalesce(sum(s.commission_cents) FILTER (WHERE r.id IS NULL AND s.currency = :currency), 0)', 'commission')
    .where('s.partner_id = :partnerId AND s.environment = :environment AND s.occurred_at >= :from AND s.occurred_at < :to', scope)
    .groupBy('1')
    .getRawMany<Row>();
  const days = new Map<string, { date: string; clicks: number; unique_clicks: number; checkouts_started: number; sales: number; gmv_cents: number; commission_cents: number }>();
  const day = (date: string) => {
    if (!days.has(date)) days.set(date, { date, clicks: 0, unique_clicks: 0, checkouts_started: 0, sales: 0, gmv_cents: 0, commission_cents: 0 });
    return days.get(date)!;
  };
  for (const r of clickRows) Object.assign(day(r.day), { clicks: Number(r.clicks), unique_clicks: Number(r.unique) });
  for (const r of checkoutRows) day(r.day).checkouts_started = Number(r.checkouts);
  for (const r of saleRows) Object.assign(day(r.day), { sales: Number(r.sales), gmv_cents: Number(r.gmv), commission_cents: Number(r.commission) });
  const rate = (sales: number, unique: number) => (unique ? Math.round((sales / unique) * 10_000) / 10_000 : 0);
  const byDay = [...days.values()].sort((a, b) => a.date.localeCompare(b.date)).map((d) => ({ ...d, conversion_rate: rate(d.sales, d.unique_clicks), currency }));
  const sum = (key: 'clicks' | 'unique_clicks' | 'checkouts_started' | 'sales' | 'gmv_cents' | 'commission_cents') => byDay.reduce((total, d) => total + d[key], 0);
  return {
    clicks: sum('clicks'),
    unique_clicks: sum('unique_clicks'),
    checkouts_started: sum('checkouts_started'),
    sales: sum('sales'),
    conversion_rate: rate(sum('sales'), sum('unique_clicks')),
    gmv_cents: sum('gmv_cents'),
    commission_cents: sum('commission_cents'),
    currency,
    by_day: byDay,
  };
}
