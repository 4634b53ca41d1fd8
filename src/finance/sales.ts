/**
 * Sales in the ledger: a completed order becomes one transaction and its sale posting; undoing a
 * booked sale (a refund after completion, a chargeback) appends the reversing posting, once, in
 * the period in which it happens.
 */
import type { EntityManager } from 'typeorm';
import { LedgerEntry } from '../db/entities/ledger-entry';
import { LedgerPosting } from '../db/entities/ledger-posting';
import type { BrokerageCase } from '../db/entities/brokerage-case';
import type { Order } from '../db/entities/order';
import { SaleTransaction } from '../db/entities/sale-transaction';
import { publicId } from '../ids';
import { commissionCents } from '../money';
import { ACCOUNT, brokerageEntries, commissionPayableEntries, post, saleEntries, type Account } from './ledger';
import type { DataSource } from 'typeorm';
import { Order as OrderRow } from '../db/entities/order';
import { CheckoutPayment } from '../db/entities/checkout-session';
import { SERVICE_REFUND_WINDOW_MS } from '../../workflows/messages';
import { ROW_LOCK } from '../db/row-lock';

/** Books the completed order at the rate fixed on it; a retry finds the sale booked and does nothing. */
export async function bookSale(tx: EntityManager, order: Order, at: Date): Promise<void> {
  const gross = order.salePriceCents;
  const commission = commissionCents(gross, order.commissionBps);
  const inserted = await tx
    .getRepository(SaleTransaction)
    .createQueryBuilder()
    .insert()
    .values({
      publicId: publicId('txn'),
      partnerId: order.partnerId,
      environment: order.environment,
      orderId: order.id,
      domain: order.domain,
      paymentModel: order.paymentModel,
      grossCents: gross,
      commissionCents: commission,
      currency: order.currency,
      occurredAt: at,
    })
    .orIgnore()
    .returning(['id'])
    .execute();
  const txn = (inserted.raw as Array<{ id: string }>)[0];
  if (!txn) return;
  await post(tx, {
    idempotencyKey: `order:${order.id}:completed`,
    partnerId: order.partnerId,
    environment: order.environment,
    kind: 'sale',
    paymentModel: order.paymentModel,
    transactionId: txn.id,
    occurredAt: at,
    currency: order.currency,
    entries: saleEntries(order.paymentModel, gross, commission),
  });
  // A hosted-checkout sale completing after its 30-day refund window (a slow transfer) cannot be
  // refunded any more: its commission is payable at once. Under the order's row lock, which the
  // window's end takes first too (makeCommissionPayable), so one of the two always sees the other.
  if (order.paymentModel === 'service_collected' && (await serviceRefundWindow(tx, order.id)).passed) {
    await postPayable(tx, { id: txn.id, partnerId: order.partnerId, environment: order.environment, paymentModel: order.paymentModel, currency: order.currency, commissionCents: commission }, at);
  }
}

/**
 * A service-collected sale's 30-day refund window (CONTRACT §11), counted from the payment's
 * recorded time (its checkout payment's; the order's for a sale without one) on the database's
 * clock at this statement (clock_timestamp(): after any lock its transaction waited for).
 */
export async function serviceRefundWindow(manager: EntityManager, orderId: string): Promise<{ paidAgoMs: number; passed: boolean }> {
  const row = await manager
    .getRepository(OrderRow)
    .createQueryBuilder('o')
    .leftJoin(CheckoutPayment, 'cp', 'cp.session_id = o.checkout_session_id')
    .select('floor(extract(epoch FROM clock_timestamp() - coalesce(cp.created_at, o.created_at)) * 1000)::float8', 'paid_ago_ms')
    .where('o.id = :orderId', { orderId })
    .getRawOne<{ paid_ago_ms: number }>();
  if (!row) throw new Error(`no order ${orderId}`);
  const paidAgoMs = Number(row.paid_ago_ms);
  return { paidAgoMs, passed: paidAgoMs >= SERVICE_REFUND_WINDOW_MS };
}

/**
 * Books a completed brokerage deal: its transaction (gross = the price, commission = the
 * partner's share) and its posting, once (unique case on the transaction, posting key
 * `brokerage:<case_id>:completed`). Call it in the transaction that marks the case completed.
 */
export async function bookBrokerageDeal(tx: EntityManager, deal: Pick<BrokerageCase, 'id' | 'partnerId' | 'environment' | 'domain' | 'currency'>, amounts: { priceCents: number; feeCents: number; partnerShareCents: number }, at: Date): Promise<boolean> {
  const inserted = await tx
    .getRepository(SaleTransaction)
    .createQueryBuilder()
    .insert()
    .values({
      publicId: publicId('txn'),
      partnerId: deal.partnerId,
      environment: deal.environment,
      orderId: null,
      brokerageCaseId: deal.id,
      domain: deal.domain,
      paymentModel: 'brokerage',
      grossCents: amounts.priceCents,
      commissionCents: amounts.partnerShareCents,
      currency: deal.currency,
      occurredAt: at,
    })
    .orIgnore()
    .returning(['id'])
    .execute();
  const txn = (inserted.raw as Array<{ id: string }>)[0];
  if (!txn) return false;
  await post(tx, {
    idempotencyKey: `brokerage:${deal.id}:completed`,
    partnerId: deal.partnerId,
    environment: deal.environment,
    kind: 'sale',
    paymentModel: 'brokerage',
    transactionId: txn.id,
    occurredAt: at,
    currency: deal.currency,
    entries: brokerageEntries(amounts.priceCents, amounts.feeCents, amounts.partnerShareCents),
  });
  return true;
}

/**
 * Undoes a booked sale: the transaction reads `reversed` and a posting with every entry of the
 * sale negated is booked in the period of `at` (or the next open one). A service-collected
 * commission that had become payable (a chargeback after the refund window) is taken back from
 * what the service owes the partner instead of from the pending commission. Returns false when it
 * was already reversed.
 */
export async function reverseSale(tx: EntityManager, transactionId: string, at: Date): Promise<boolean> {
  const txn = await tx.getRepository(SaleTransaction).createQueryBuilder('t').setLock(ROW_LOCK).where('t.id = :transactionId', { transactionId }).getOneOrFail();
  if (txn.status === 'reversed') return false;
  const sale = await tx.getRepository(LedgerPosting).findOneByOrFail({ transactionId, kind: 'sale' });
  const entries = await tx.getRepository(LedgerEntry).findBy({ postingId: sale.id });
  const payable = await tx.getRepository(LedgerPosting).existsBy({ idempotencyKey: payableKey(transactionId) });
  const undo = (account: Account): Account => (payable && account === ACCOUNT.partnerCommissionPending ? ACCOUNT.serviceOwesPartner : account);
  const posted = await post(tx, {
    idempotencyKey: `transaction:${transactionId}:reversed`,
    partnerId: txn.partnerId,
    environment: txn.environment,
    kind: 'reversal',
    paymentModel: txn.paymentModel,
    transactionId,
    occurredAt: at,
    currency: txn.currency,
    entries: entries.map((e) => ({ account: undo(e.account as Account), amountCents: -e.amountCents })),
  });
  await tx.getRepository(SaleTransaction).update({ id: transactionId }, { status: 'reversed', reversedAt: at });
  return posted !== undefined;
}

/** The posting that makes a service-collected sale's commission payable, by its transaction. */
export const payableKey = (transactionId: string) => `transaction:${transactionId}:payable`;

/**
 * A service-collected sale's 30-day refund window has passed (the checkout session's workflow
 * timer, or the recovery sweep for a sale whose workflow never will): its commission becomes
 * payable, once, unless the sale was undone meanwhile. Under the order's row lock, then the
 * transaction's, which a refund of the sale takes too, so the two never both happen.
 * `not_booked` while the order's transfer is still under way: its booking then makes the
 * commission payable at once (bookSale), as the order's lock orders the two.
 */
export async function makeCommissionPayable(dataSource: DataSource, orderId: string, at: Date): Promise<'payable' | 'reversed' | 'not_booked' | 'never'> {
  return dataSource.transaction(async (tx) => {
    const order = await tx.getRepository(OrderRow).createQueryBuilder('o').setLock(ROW_LOCK).where('o.id = :orderId', { orderId }).getOneOrFail();
    const txn = await tx.getRepository(SaleTransaction).createQueryBuilder('t').setLock(ROW_LOCK).where('t.order_id = :orderId', { orderId }).getOne();
    if (!txn) return order.status === 'REFUNDED' || order.status === 'TRANSFER_FAILED' ? 'never' : 'not_booked';
    if (txn.status === 'reversed') return 'reversed';
    await postPayable(tx, txn, at);
    return 'payable';
  });
}

/** The posting that makes a sale's commission payable, once (payableKey). */
async function postPayable(tx: EntityManager, txn: Pick<SaleTransaction, 'id' | 'partnerId' | 'environment' | 'paymentModel' | 'currency' | 'commissionCents'>, at: Date): Promise<void> {
  await post(tx, {
    idempotencyKey: payableKey(txn.id),
    partnerId: txn.partnerId,
    environment: txn.environment,
    kind: 'commission_payable',
    paymentModel: txn.paymentModel,
    transactionId: txn.id,
    occurredAt: at,
    currency: txn.currency,
    settled: false,
    entries: commissionPayableEntries(txn.commissionCents),
  });
}

/**
 * A condition on transaction `alias`: its sale booked the commission pending (not sales booked
 * before the refund window existed, whose commission was payable at once: making those payable
 * again would owe the partner twice).
 */
export const bookedPending = (alias: string) =>
  `EXISTS (SELECT 1 FROM ledger_entries pe JOIN ledger_postings sp ON sp.id = pe.posting_id WHERE sp.transaction_id = ${alias}.id AND sp.kind = 'sale' AND pe.account = '${ACCOUNT.partnerCommissionPending}')`;

/**
 * Hosted-checkout sales past their 30-day window whose commission is still pending: sales whose
 * session workflow will never make it payable (runs that ended before that step existed, or are
 * pinned to a build without it), or whose window ended while the sale was not yet booked. The
 * recovery sweep makes each payable. Order ids, oldest first, at most `limit`.
 */
export async function pendingCommissionsPastWindow(dataSource: DataSource, limit = 100): Promise<string[]> {
  const rows = await pendingCommissions(dataSource.manager, 'clock_timestamp() - make_interval(secs => :windowSeconds)', { windowSeconds: SERVICE_REFUND_WINDOW_MS / 1000 })
    .orderBy('t.occurred_at', 'ASC')
    .limit(limit)
    .getRawMany<{ order_id: string }>();
  return rows.map((r) => r.order_id);
}

/**
 * Completed hosted-checkout sales whose commission was booked pending and is not payable, paid at
 * or before `paidBefore` (an SQL time expression, with its `params`): `txn` (public id) and
 * `order_id` of each. The sweep's question past the window, and reconcile's past its grace.
 */
export function pendingCommissions(manager: EntityManager, paidBefore: string, params: Record<string, unknown> = {}) {
  return manager
    .getRepository(SaleTransaction)
    .createQueryBuilder('t')
    .innerJoin(OrderRow, 'o', 'o.id = t.order_id')
    .leftJoin(CheckoutPayment, 'cp', 'cp.session_id = o.checkout_session_id')
    .leftJoin(LedgerPosting, 'p', "p.idempotency_key = 'transaction:' || t.id || ':payable'")
    .select('t.public_id', 'txn')
    .addSelect('t.order_id', 'order_id')
    .where("t.payment_model = 'service_collected' AND t.status = 'completed' AND p.id IS NULL")
    .andWhere(bookedPending('t'))
    .andWhere(`coalesce(cp.created_at, o.created_at) <= ${paidBefore}`, params);
}
