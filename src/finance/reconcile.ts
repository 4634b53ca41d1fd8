/**
 * `admin reconcile` (CONTRACT §12): recomputes every figure the API answers from the ledger's
 * entries and lists each place where a stored figure disagrees. Entries themselves cannot be
 * edited (triggers); what can drift is everything derived from them: a settlement's snapshot, a
 * transaction's amounts or status, a payout's lines. A brokered deal's gross is its `escrow_held`
 * entry (no `sales` entry: the service sold nothing of its own) and its commission the partner's
 * `partner_commission_expense`.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { LedgerEntry } from '../db/entities/ledger-entry';
import { LedgerPosting } from '../db/entities/ledger-posting';
import { Payout, PayoutLine } from '../db/entities/payout';
import { SaleTransaction } from '../db/entities/sale-transaction';
import { Settlement } from '../db/entities/settlement';
import { Order } from '../db/entities/order';
import { ReferralSale } from '../db/entities/referral';
import { ACCOUNT } from './ledger';
import { figuresFromLedger, periodKey } from './settlements';

export interface Difference {
  kind: 'posting' | 'transaction' | 'settlement' | 'payout' | 'order' | 'referral_sale';
  id: string;
  field: string;
  stored: number | string | null;
  from_ledger: number | string | null;
}

export interface ReconcileReport {
  ok: boolean;
  environment: Environment | 'all';
  checked: { postings: number; transactions: number; settlements: number; payouts: number };
  balances: Array<{ partner_id: string; environment: Environment; service_owes_partner_cents: number; unpaid_lines_cents: number }>;
  differences: Difference[];
}

export async function reconcile(dataSource: DataSource, environment?: Environment): Promise<ReconcileReport> {
  const differences: Difference[] = [];
  const inEnv = <T extends { andWhere: (w: string, p?: object) => T }>(q: T, alias: string) => (environment ? q.andWhere(`${alias}.environment = :environment`, { environment }) : q);
  const manager = dataSource.manager;

  // 1. Every posting balances.
  const postings = await inEnv(
    manager
      .getRepository(LedgerEntry)
      .createQueryBuilder('e')
      .select('e.posting_id', 'posting_id')
      .addSelect('sum(e.amount_cents)', 'sum')
      .where('true')
      .groupBy('e.posting_id'),
    'e',
  ).getRawMany<{ posting_id: string; sum: string }>();
  for (const p of postings) if (Number(p.sum) !== 0) differences.push({ kind: 'posting', id: p.posting_id, field: 'sum of entries', stored: Number(p.sum), from_ledger: 0 });

  // 2. Each transaction's amounts are its sale posting's, and it is reversed exactly when a reversal was booked.
  const txns = await inEnv(manager.getRepository(SaleTransaction).createQueryBuilder('t').where('true'), 't').getMany();
  const sums = await inEnv(
    manager
      .getRepository(LedgerEntry)
      .createQueryBuilder('e')
      .innerJoin(LedgerPosting, 'p', 'p.id = e.posting_id')
      .select('p.transaction_id', 'transaction_id')
      .addSelect(`-sum(e.amount_cents) FILTER (WHERE p.kind = 'sale' AND e.account = :sales)`, 'gross')
      // A brokered deal's price is what went into escrow (the service sold nothing of its own).
      .addSelect(`sum(e.amount_cents) FILTER (WHERE p.kind = 'sale' AND e.account = :escrow)`, 'escrow')
      .addSelect(`sum(e.amount_cents) FILTER (WHERE p.kind = 'sale' AND e.account IN (:...commission))`, 'commission')
      .addSelect(`count(DISTINCT p.id) FILTER (WHERE p.kind = 'reversal')`, 'reversals')
      .where('p.transaction_id IS NOT NULL')
      .setParameters({ sales: ACCOUNT.sales, escrow: ACCOUNT.escrowHeld, commission: [ACCOUNT.partnerCommissionRetained, ACCOUNT.partnerCommissionExpense] })
      .groupBy('p.transaction_id'),
    'p',
  ).getRawMany<{ transaction_id: string; gross: string | null; escrow: string | null; commission: string | null; reversals: string }>();
  const byTxn = new Map(sums.map((s) => [s.transaction_id, s]));
  for (const t of txns) {
    const s = byTxn.get(t.id);
    const grossFromLedger = t.paymentModel === 'brokerage' ? s?.escrow : s?.gross;
    const gross = grossFromLedger == null ? null : Number(grossFromLedger);
    const commission = s?.commission == null ? 0 : Number(s.commission);
    const status = Number(s?.reversals ?? 0) > 0 ? 'reversed' : 'completed';
    if (gross !== t.grossCents) differences.push({ kind: 'transaction', id: t.publicId, field: 'gross_cents', stored: t.grossCents, from_ledger: gross });
    if (commission !== t.commissionCents) differences.push({ kind: 'transaction', id: t.publicId, field: 'commission_cents', stored: t.commissionCents, from_ledger: commission });
    if (status !== t.status) differences.push({ kind: 'transaction', id: t.publicId, field: 'status', stored: t.status, from_ledger: status });
  }

  // 3. Each closed settlement's snapshot equals the sums over its period's entries.
  const closed = await inEnv(manager.getRepository(Settlement).createQueryBuilder('s').where("s.status = 'closed'"), 's').getMany();
  for (const s of closed) {
    const live = (await figuresFromLedger(manager, s.partnerId, s.environment, [s])).get(periodKey(s.periodStart, s.currency))!;
    const stored = { gross_sold_cents: s.grossSoldCents, commission_retained_cents: s.commissionRetainedCents, amount_owed_to_service_cents: s.amountOwedToServiceCents };
    for (const field of Object.keys(live) as Array<keyof typeof live>) {
      if (stored[field] !== live[field]) differences.push({ kind: 'settlement', id: s.publicId, field, stored: stored[field], from_ledger: live[field] });
    }
    if (s.amountOwedToServiceCents !== (s.grossSoldCents ?? 0) - (s.commissionRetainedCents ?? 0)) {
      differences.push({ kind: 'settlement', id: s.publicId, field: 'gross_sold_cents - commission_retained_cents', stored: s.amountOwedToServiceCents, from_ledger: (s.grossSoldCents ?? 0) - (s.commissionRetainedCents ?? 0) });
    }
  }

  // 4. Each payout paid exactly what its lines owed, and its own posting moved that amount.
  const payouts = await inEnv(manager.getRepository(Payout).createQueryBuilder('po').where('true'), 'po').getMany();
  for (const po of payouts) {
    const lines = await manager
      .getRepository(LedgerEntry)
      .createQueryBuilder('e')
      .innerJoin(PayoutLine, 'l', 'l.posting_id = e.posting_id')
      .select('coalesce(-sum(e.amount_cents), 0)', 'owed')
      .where('l.payout_id = :id AND e.account = :payable', { id: po.id, payable: ACCOUNT.serviceOwesPartner })
      .getRawOne<{ owed: string }>();
    const paid = await manager
      .getRepository(LedgerEntry)
      .createQueryBuilder('e')
      .innerJoin(LedgerPosting, 'p', 'p.id = e.posting_id')
      .select('coalesce(sum(e.amount_cents), 0)', 'paid')
      .where("p.payout_id = :id AND p.kind = 'payout' AND e.account = :payable", { id: po.id, payable: ACCOUNT.serviceOwesPartner })
      .getRawOne<{ paid: string }>();
    if (Number(lines!.owed) !== Number(paid!.paid)) differences.push({ kind: 'payout', id: po.publicId, field: 'amount_cents', stored: Number(paid!.paid), from_ledger: Number(lines!.owed) });
  }

  // 5. What the service owes each partner is exactly what its unpaid lines owe.
  const balances = await inEnv(
    manager
      .getRepository(LedgerEntry)
      .createQueryBuilder('e')
      .innerJoin(LedgerPosting, 'p', 'p.id = e.posting_id')
      .leftJoin(PayoutLine, 'l', 'l.posting_id = p.id')
      .select('e.partner_id', 'partner_id')
      .addSelect('e.environment', 'environment')
      .addSelect('-sum(e.amount_cents)', 'balance')
      .addSelect(`coalesce(-sum(e.amount_cents) FILTER (WHERE p.kind <> 'payout' AND l.posting_id IS NULL), 0)`, 'unpaid')
      .where('e.account = :payable', { payable: ACCOUNT.serviceOwesPartner })
      .groupBy('e.partner_id')
      .addGroupBy('e.environment'),
    'e',
  ).getRawMany<{ partner_id: string; environment: Environment; balance: string; unpaid: string }>();
  for (const b of balances) {
    if (Number(b.balance) !== Number(b.unpaid)) {
      differences.push({ kind: 'payout', id: `${b.partner_id}:${b.environment}`, field: 'service_owes_partner balance', stored: Number(b.balance), from_ledger: Number(b.unpaid) });
    }
  }

  // 6. Every completed order has its booked sale (a lost booking would otherwise go unseen).
  const unbooked = await inEnv(
    manager
      .getRepository(Order)
      .createQueryBuilder('o')
      .leftJoin(SaleTransaction, 't', 't.order_id = o.id')
      .where("o.status = 'TRANSFER_COMPLETED' AND t.id IS NULL"),
    'o',
  ).getMany();
  for (const o of unbooked) differences.push({ kind: 'order', id: o.publicId, field: 'booked sale', stored: 'missing', from_ledger: 'a completed order books one' });

  // 7. Each referred sale's commission is the one its pending line booked.
  const referral = await inEnv(
    manager
      .getRepository(ReferralSale)
      .createQueryBuilder('s')
      .leftJoin(LedgerPosting, 'p', "p.referral_sale_id = s.id AND p.kind = 'referral_pending'")
      .leftJoin(LedgerEntry, 'e', 'e.posting_id = p.id AND e.account = :expense', { expense: ACCOUNT.referralCommissionExpense })
      .select('s.public_id', 'sale_id')
      .addSelect('s.commission_cents', 'stored')
      .addSelect('sum(e.amount_cents)', 'booked')
      .where('true')
      .groupBy('s.public_id')
      .addGroupBy('s.commission_cents'),
    's',
  ).getRawMany<{ sale_id: string; stored: string; booked: string | null }>();
  for (const r of referral) {
    const booked = r.booked === null ? 0 : Number(r.booked);
    if (booked !== Number(r.stored)) differences.push({ kind: 'referral_sale', id: r.sale_id, field: 'commission_cents', stored: Number(r.stored), from_ledger: booked });
  }

  return {
    ok: differences.length === 0,
    environment: environment ?? 'all',
    checked: { postings: postings.length, transactions: txns.length, settlements: closed.length, payouts: payouts.length },
    balances: balances.map((b) => ({ partner_id: b.partner_id, environment: b.environment, service_owes_partner_cents: Number(b.balance), unpaid_lines_cents: Number(b.unpaid) })),
    differences,
  };
}
