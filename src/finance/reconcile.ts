/**
 * `admin reconcile` (CONTRACT §12): recomputes every figure the API answers from the ledger's
 * entries and the sales behind them, and lists each place where they disagree. Entries cannot
 * be edited (triggers) and every posting balances (a deferred trigger refuses the commit
 * otherwise), so what is checked is what can drift: the stored rows derived from entries, the
 * entries derived from sales, and the postings that should exist but were never booked.
 *
 * One consistent snapshot (REPEATABLE READ): a refund committing while it runs is either wholly
 * in what it reads or wholly out of it, never half a difference. Each check is per currency:
 * sums never add two.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { LedgerEntry } from '../db/entities/ledger-entry';
import { LedgerPosting } from '../db/entities/ledger-posting';
import { PayoutLine } from '../db/entities/payout';
import { SaleTransaction } from '../db/entities/sale-transaction';
import { Settlement } from '../db/entities/settlement';
import { Order } from '../db/entities/order';
import { CardAttemptCheck, CheckoutPayment, CheckoutSession } from '../db/entities/checkout-session';
import { SandboxCharge } from '../db/entities/sandbox-charge';
import { CardDispute } from '../db/entities/card-dispute';
import { ReferralSale } from '../db/entities/referral';
import { commissionCents } from '../money';
import { ACCOUNT } from './ledger';
import { figuresFromLedger, periodKey, type SettlementFigures } from './settlements';
import { pendingCommissions } from './sales';

export interface Difference {
  kind: 'transaction' | 'settlement' | 'payout' | 'order' | 'referral_sale' | 'card_charge';
  id: string;
  field: string;
  stored: number | string | null;
  from_ledger: number | string | null;
}

export interface ReconcileReport {
  ok: boolean;
  environment: Environment | 'all';
  checked: { transactions: number; settlements: number; orders: number; referral_sales: number };
  balances: Array<{ partner_id: string; environment: Environment; currency: string; service_owes_partner_cents: number; unpaid_lines_cents: number }>;
  differences: Difference[];
}

/** A sale's refund window is 30 days (a referred one's too); its workflow's timer may run this much late before a missing posting is a difference. */
const REFERRAL_WINDOW_GRACE = "interval '31 days'";

/**
 * The sandbox processor's charges and refunds against the service's payments and postings:
 * - an approved charge (not voided) is a recorded payment's, or its attempt is still out (its
 *   session paying with that attempt) or followed up (an unresolved card_attempt_checks row);
 *   anything else is money taken with no order;
 * - a recorded payment has its charge, approved and not voided, for the same amount and currency;
 * - a charge refunded at the processor has its `card_refund` posting, and a posting its refund
 *   (a sale at price 0 refunds nothing there).
 */
async function processorDifferences(manager: EntityManager): Promise<Difference[]> {
  const found: Difference[] = [];
  const charges = await manager
    .getRepository(SandboxCharge)
    .createQueryBuilder('c')
    .leftJoin(CheckoutPayment, 'cp', 'cp.payment_ref = c.payment_ref')
    .leftJoin(CheckoutSession, 's', "s.paying_since IS NOT NULL AND s.public_id || ':' || s.payment_attempt = c.idempotency_key")
    .leftJoin(CardAttemptCheck, 'k', 'k.idempotency_key = c.idempotency_key AND k.resolved_at IS NULL')
    .leftJoin(LedgerPosting, 'back', "back.idempotency_key = 'card:' || c.payment_ref || ':refunded'")
    .select(['c.payment_ref AS ref', 'c.status AS status', 'c.amount_cents AS amount', 'c.currency AS currency', 'c.refunded_cents AS refunded'])
    .addSelect('cp.id IS NOT NULL', 'recorded')
    .addSelect('cp.amount_cents', 'recorded_amount')
    .addSelect('cp.currency', 'recorded_currency')
    .addSelect('s.id IS NOT NULL OR k.id IS NOT NULL', 'followed')
    .addSelect('back.id IS NOT NULL', 'refund_booked')
    .where("c.status <> 'declined'")
    .getRawMany<{ ref: string; status: string; amount: string; currency: string; refunded: string; recorded: boolean; recorded_amount: string | null; recorded_currency: string | null; followed: boolean; refund_booked: boolean }>();
  for (const c of charges) {
    if (c.status === 'approved' && !c.recorded && !c.followed) found.push({ kind: 'card_charge', id: c.ref, field: 'charge at the processor without a payment', stored: 'missing', from_ledger: `approved ${c.amount} ${c.currency}` });
    if (c.recorded && c.status !== 'approved') found.push({ kind: 'card_charge', id: c.ref, field: "recorded payment's charge at the processor", stored: 'approved', from_ledger: c.status });
    if (c.recorded && (Number(c.recorded_amount) !== Number(c.amount) || c.recorded_currency !== c.currency)) {
      found.push({ kind: 'card_charge', id: c.ref, field: 'amount charged', stored: `${c.recorded_amount} ${c.recorded_currency}`, from_ledger: `${c.amount} ${c.currency}` });
    }
    if (Number(c.refunded) > 0 && !c.refund_booked) found.push({ kind: 'card_charge', id: c.ref, field: 'refund at the processor booked (card_refund)', stored: 'missing', from_ledger: `refunded ${c.refunded} ${c.currency}` });
    if (c.refund_booked && Number(c.refunded) === 0 && Number(c.amount) > 0) found.push({ kind: 'card_charge', id: c.ref, field: 'card_refund posting refunded at the processor', stored: 'booked', from_ledger: 'not refunded' });
  }
  // Recorded sandbox payments whose charge the processor has no record of.
  const orphans = await manager
    .getRepository(CheckoutPayment)
    .createQueryBuilder('cp')
    .innerJoin(CheckoutSession, 's', "s.id = cp.session_id AND s.environment = 'sandbox'")
    .leftJoin(SandboxCharge, 'c', 'c.payment_ref = cp.payment_ref')
    .select('cp.payment_ref', 'ref')
    .where('c.id IS NULL')
    .getRawMany<{ ref: string }>();
  for (const o of orphans) found.push({ kind: 'card_charge', id: o.ref, field: "recorded payment's charge at the processor", stored: 'approved', from_ledger: 'missing' });
  return found;
}

export async function reconcile(dataSource: DataSource, environment?: Environment): Promise<ReconcileReport> {
  return dataSource.transaction('REPEATABLE READ', (tx) => reconcileIn(tx, environment));
}

async function reconcileIn(manager: EntityManager, environment?: Environment): Promise<ReconcileReport> {
  const differences: Difference[] = [];
  const inEnv = <T extends { andWhere: (w: string, p?: object) => T }>(q: T, alias: string) => (environment ? q.andWhere(`${alias}.environment = :environment`, { environment }) : q);

  // 1. Each transaction's amounts are its sale posting's, and it reads reversed exactly when a
  //    reversal was booked. From the postings (a zero-price sale books a posting with no entries).
  const txns = await inEnv(manager.getRepository(SaleTransaction).createQueryBuilder('t').where('true'), 't').getMany();
  const sums = await inEnv(
    manager
      .getRepository(LedgerPosting)
      .createQueryBuilder('p')
      .leftJoin(LedgerEntry, 'e', 'e.posting_id = p.id')
      .select('p.transaction_id', 'transaction_id')
      .addSelect(`count(DISTINCT p.id) FILTER (WHERE p.kind = 'sale')`, 'sales')
      .addSelect(`coalesce(-sum(e.amount_cents) FILTER (WHERE p.kind = 'sale' AND e.account = :sales), 0)`, 'gross')
      // A brokered deal's price is what went into escrow (the service sold nothing of its own).
      .addSelect(`coalesce(sum(e.amount_cents) FILTER (WHERE p.kind = 'sale' AND e.account = :escrow), 0)`, 'escrow')
      .addSelect(`coalesce(sum(e.amount_cents) FILTER (WHERE p.kind = 'sale' AND e.account IN (:...commission)), 0)`, 'commission')
      .addSelect(`count(DISTINCT p.id) FILTER (WHERE p.kind = 'reversal')`, 'reversals')
      .addSelect(`min(to_char(p.period_start, 'YYYY-MM-DD')) FILTER (WHERE p.kind = 'sale')`, 'sale_period')
      .addSelect(`min(to_char(p.period_start, 'YYYY-MM-DD')) FILTER (WHERE p.kind = 'reversal')`, 'reversal_period')
      .where('p.transaction_id IS NOT NULL')
      .setParameters({ sales: ACCOUNT.sales, escrow: ACCOUNT.escrowHeld, commission: [ACCOUNT.partnerCommissionRetained, ACCOUNT.partnerCommissionExpense] })
      .groupBy('p.transaction_id'),
    'p',
  ).getRawMany<{ transaction_id: string; sales: string; gross: string; escrow: string; commission: string; reversals: string; sale_period: string | null; reversal_period: string | null }>();
  const byTxn = new Map(sums.map((s) => [s.transaction_id, s]));
  for (const t of txns) {
    const s = byTxn.get(t.id);
    if (!s || Number(s.sales) === 0) {
      differences.push({ kind: 'transaction', id: t.publicId, field: 'sale posting', stored: 'missing', from_ledger: 'a transaction is booked by one' });
      continue;
    }
    const gross = Number(t.paymentModel === 'brokerage' ? s.escrow : s.gross);
    const commission = Number(s.commission);
    const status = Number(s.reversals) > 0 ? 'reversed' : 'completed';
    if (gross !== t.grossCents) differences.push({ kind: 'transaction', id: t.publicId, field: 'gross_cents', stored: t.grossCents, from_ledger: gross });
    if (commission !== t.commissionCents) differences.push({ kind: 'transaction', id: t.publicId, field: 'commission_cents', stored: t.commissionCents, from_ledger: commission });
    if (status !== t.status) differences.push({ kind: 'transaction', id: t.publicId, field: 'status', stored: t.status, from_ledger: status });
  }

  // 2. Each order's transaction is its sale: gross is the order's price, commission the rate
  //    fixed on the order, the currency the order's; a completed order has one, a refunded one
  //    that was booked is reversed.
  const orders = await inEnv(
    manager
      .getRepository(Order)
      .createQueryBuilder('o')
      .leftJoin(SaleTransaction, 't', 't.order_id = o.id')
      .select(['o.public_id AS public_id', 'o.status AS status', 'o.sale_price_cents AS price', 'o.commission_bps AS bps', 'o.currency AS currency'])
      .addSelect(['t.public_id AS txn', 't.gross_cents AS gross', 't.commission_cents AS commission', 't.currency AS txn_currency', 't.status AS txn_status'])
      .where("(o.status IN ('TRANSFER_COMPLETED', 'REFUNDED') OR t.id IS NOT NULL)"),
    'o',
  ).getRawMany<{ public_id: string; status: string; price: string; bps: number; currency: string; txn: string | null; gross: string | null; commission: string | null; txn_currency: string | null; txn_status: string | null }>();
  for (const o of orders) {
    if (o.txn === null) {
      if (o.status === 'TRANSFER_COMPLETED') differences.push({ kind: 'order', id: o.public_id, field: 'booked sale', stored: 'missing', from_ledger: 'a completed order books one' });
      continue;
    }
    const price = Number(o.price);
    if (Number(o.gross) !== price) differences.push({ kind: 'transaction', id: o.txn, field: 'gross_cents (the order\'s sale_price_cents)', stored: Number(o.gross), from_ledger: price });
    const commission = commissionCents(Number(o.gross), o.bps);
    if (Number(o.commission) !== commission) differences.push({ kind: 'transaction', id: o.txn, field: `commission_cents (floor(gross × ${o.bps} bps))`, stored: Number(o.commission), from_ledger: commission });
    if (o.txn_currency !== o.currency) differences.push({ kind: 'transaction', id: o.txn, field: 'currency (the order\'s)', stored: o.txn_currency, from_ledger: o.currency });
    if (o.status === 'REFUNDED' && o.txn_status !== 'reversed') differences.push({ kind: 'order', id: o.public_id, field: 'refunded sale reversed', stored: o.txn_status, from_ledger: 'reversed' });
  }

  // 3. Each settlement agrees with the ledger (a closed one's snapshot never changed) and with
  //    /transactions: its partner-collected sales booked into the month, less those reversed in it.
  const settlements = await inEnv(manager.getRepository(Settlement).createQueryBuilder('s').where('true'), 's').getMany();
  const fromTransactions = new Map<string, SettlementFigures>();
  for (const t of txns) {
    const s = byTxn.get(t.id);
    if (t.paymentModel !== 'partner_collected' || !s) continue;
    const add = (period: string | null, sign: number) => {
      if (!period) return;
      const key = `${t.partnerId} ${t.environment} ${periodKey(period, t.currency)}`;
      const f = fromTransactions.get(key) ?? { gross_sold_cents: 0, commission_retained_cents: 0, amount_owed_to_service_cents: 0 };
      f.gross_sold_cents += sign * t.grossCents;
      f.commission_retained_cents += sign * t.commissionCents;
      f.amount_owed_to_service_cents += sign * (t.grossCents - t.commissionCents);
      fromTransactions.set(key, f);
    };
    add(s.sale_period, 1);
    if (t.status === 'reversed') add(s.reversal_period, -1);
  }
  for (const s of settlements) {
    const live = (await figuresFromLedger(manager, s.partnerId, s.environment, [s])).get(periodKey(s.periodStart, s.currency))!;
    const shown = s.status === 'closed' ? { gross_sold_cents: s.grossSoldCents!, commission_retained_cents: s.commissionRetainedCents!, amount_owed_to_service_cents: s.amountOwedToServiceCents! } : live;
    const listed = fromTransactions.get(`${s.partnerId} ${s.environment} ${periodKey(s.periodStart, s.currency)}`) ?? { gross_sold_cents: 0, commission_retained_cents: 0, amount_owed_to_service_cents: 0 };
    for (const field of Object.keys(live) as Array<keyof SettlementFigures>) {
      if (shown[field] !== live[field]) differences.push({ kind: 'settlement', id: s.publicId, field, stored: shown[field], from_ledger: live[field] });
      else if (shown[field] !== listed[field]) differences.push({ kind: 'settlement', id: s.publicId, field: `${field} (its month's /transactions)`, stored: shown[field], from_ledger: listed[field] });
    }
  }

  // 4. What the service owes each partner, per currency, is exactly what its unpaid lines owe.
  const balances = await inEnv(
    manager
      .getRepository(LedgerEntry)
      .createQueryBuilder('e')
      .innerJoin(LedgerPosting, 'p', 'p.id = e.posting_id')
      .leftJoin(PayoutLine, 'l', 'l.posting_id = p.id')
      .select('e.partner_id', 'partner_id')
      .addSelect('e.environment', 'environment')
      .addSelect('e.currency', 'currency')
      .addSelect('-sum(e.amount_cents)', 'balance')
      .addSelect(`coalesce(-sum(e.amount_cents) FILTER (WHERE p.kind <> 'payout' AND l.posting_id IS NULL), 0)`, 'unpaid')
      .where('e.account = :payable', { payable: ACCOUNT.serviceOwesPartner })
      .groupBy('e.partner_id')
      .addGroupBy('e.environment')
      .addGroupBy('e.currency'),
    'e',
  ).getRawMany<{ partner_id: string; environment: Environment; currency: string; balance: string; unpaid: string }>();
  for (const b of balances) {
    if (Number(b.balance) !== Number(b.unpaid)) {
      differences.push({ kind: 'payout', id: `${b.partner_id}:${b.environment}:${b.currency}`, field: 'service_owes_partner balance', stored: Number(b.balance), from_ledger: Number(b.unpaid) });
    }
  }

  // 5. Each referred sale: its commission is the one its pending line booked; a sale whose order
  //    was refunded or failed is reversed; a sale past its 30-day window has accrued or been
  //    reversed (else its workflow was lost).
  const referral = await inEnv(
    manager
      .getRepository(ReferralSale)
      .createQueryBuilder('s')
      .innerJoin(Order, 'o', 'o.id = s.order_id')
      .leftJoin(LedgerPosting, 'p', 'p.referral_sale_id = s.id')
      .leftJoin(LedgerEntry, 'e', "e.posting_id = p.id AND p.kind = 'referral_pending' AND e.account = :expense", { expense: ACCOUNT.referralCommissionExpense })
      .select('s.public_id', 'sale_id')
      .addSelect('s.commission_cents', 'stored')
      .addSelect('o.status', 'order_status')
      .addSelect(`s.occurred_at < now() - ${REFERRAL_WINDOW_GRACE}`, 'window_passed')
      .addSelect('coalesce(sum(e.amount_cents), 0)', 'booked')
      .addSelect(`count(p.id) FILTER (WHERE p.kind = 'referral_accrued')`, 'accrued')
      .addSelect(`count(p.id) FILTER (WHERE p.kind = 'referral_reversed')`, 'reversed')
      .where('true')
      .groupBy('s.id')
      .addGroupBy('o.status'),
    's',
  ).getRawMany<{ sale_id: string; stored: string; order_status: string; window_passed: boolean; booked: string; accrued: string; reversed: string }>();
  for (const r of referral) {
    if (Number(r.booked) !== Number(r.stored)) differences.push({ kind: 'referral_sale', id: r.sale_id, field: 'commission_cents', stored: Number(r.stored), from_ledger: Number(r.booked) });
    const reversed = Number(r.reversed) > 0;
    if ((r.order_status === 'REFUNDED' || r.order_status === 'TRANSFER_FAILED') && !reversed) {
      differences.push({ kind: 'referral_sale', id: r.sale_id, field: `commission reversed (order ${r.order_status})`, stored: Number(r.accrued) > 0 ? 'accrued' : 'pending', from_ledger: 'reversed' });
    } else if (r.window_passed && !reversed && Number(r.accrued) === 0) {
      differences.push({ kind: 'referral_sale', id: r.sale_id, field: 'commission after its 30-day window', stored: 'pending', from_ledger: 'accrued or reversed' });
    }
  }

  // 6. Each card payment is booked, and the buyer of a refunded or failed hosted-checkout sale
  //    got it back (src/checkout/card-refunds.ts).
  const cards = await inEnv(
    manager
      .getRepository(CheckoutPayment)
      .createQueryBuilder('cp')
      .innerJoin(Order, 'o', 'o.checkout_session_id = cp.session_id')
      .leftJoin(LedgerPosting, 'paid', "paid.idempotency_key = 'card:' || cp.payment_ref || ':paid'")
      .leftJoin(LedgerPosting, 'back', "back.idempotency_key = 'card:' || cp.payment_ref || ':refunded'")
      .select('o.public_id', 'order_id')
      .addSelect('o.status', 'status')
      .addSelect('paid.id IS NOT NULL', 'booked')
      .addSelect('back.id IS NOT NULL', 'refunded')
      .where('true'),
    'o',
  ).getRawMany<{ order_id: string; status: string; booked: boolean; refunded: boolean }>();
  for (const c of cards) {
    if (!c.booked) differences.push({ kind: 'order', id: c.order_id, field: 'card payment booked', stored: 'missing', from_ledger: 'card_payment' });
    if ((c.status === 'REFUNDED' || c.status === 'TRANSFER_FAILED') && !c.refunded) differences.push({ kind: 'order', id: c.order_id, field: `buyer's card refunded (order ${c.status})`, stored: 'missing', from_ledger: 'card_refund' });
  }

  // 7. The card processor's own record against the service's (sandbox: the simulator's tables, in
  //    this snapshot; a live processor's records are compared once live takes cards).
  if (environment !== 'live') differences.push(...(await processorDifferences(manager)));

  // 9. Each card dispute against its postings: opened held its amount; won released it; lost gave
  //    it to the buyer and reversed the order's booked sale.
  const disputes = await inEnv(
    manager
      .getRepository(CardDispute)
      .createQueryBuilder('d')
      .leftJoin(LedgerPosting, 'p', "p.idempotency_key LIKE 'dispute:' || d.id || ':%'")
      .leftJoin(SaleTransaction, 't', 't.order_id = d.order_id')
      .select(['d.public_id AS dispute', 'd.status AS status', 't.status AS txn_status'])
      .addSelect(`array_agg(p.kind ORDER BY p.kind) FILTER (WHERE p.id IS NOT NULL)`, 'kinds')
      .where('true')
      .groupBy('d.id')
      .addGroupBy('t.status'),
    'd',
  ).getRawMany<{ dispute: string; status: string; txn_status: string | null; kinds: string[] | null }>();
  for (const d of disputes) {
    const kinds = (d.kinds ?? []).join(',');
    const expected = d.status === 'open' ? 'dispute_opened' : d.status === 'won' ? 'dispute_opened,dispute_won' : 'dispute_lost,dispute_opened';
    if (kinds !== expected) differences.push({ kind: 'card_charge', id: d.dispute, field: `dispute postings (${d.status})`, stored: kinds || 'none', from_ledger: expected });
    if (d.status === 'lost' && d.txn_status === 'completed') differences.push({ kind: 'card_charge', id: d.dispute, field: 'lost dispute: sale reversed', stored: 'completed', from_ledger: 'reversed' });
  }

  // 8. Each hosted-checkout sale still standing 31 days after its payment has its commission
  //    payable (its session workflow's timer, or the recovery sweep for one that never will).
  const pendingTooLong = await inEnv(pendingCommissions(manager, `now() - ${REFERRAL_WINDOW_GRACE}`), 't').getRawMany<{ txn: string }>();
  for (const t of pendingTooLong) differences.push({ kind: 'transaction', id: t.txn, field: 'commission after its 30-day refund window', stored: 'pending', from_ledger: 'payable' });

  return {
    ok: differences.length === 0,
    environment: environment ?? 'all',
    checked: { transactions: txns.length, settlements: settlements.length, orders: orders.length, referral_sales: referral.length },
    balances: balances.map((b) => ({ partner_id: b.partner_id, environment: b.environment, currency: b.currency, service_owes_partner_cents: Number(b.balance), unpaid_lines_cents: Number(b.unpaid) })),
    differences,
  };
}
