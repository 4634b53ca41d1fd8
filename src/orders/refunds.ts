/**
 * Refunds of partner-collected orders (CONTRACT §6). The order's fulfilment workflow decides
 * (workflows/order-fulfilment.ts): it grants a refund only when no transfer is under way or the
 * registrar confirmed that it stopped one. Granting is this one transaction: the refund row,
 * the order REFUNDED, the name back on the market if this order still holds it, the event.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { OrderStatus } from '../../workflows/messages';
import { Order } from '../db/entities/order';
import { Refund } from '../db/entities/refund';
import { appendEvent } from '../events/outbox';
import { LedgerPosting } from '../db/entities/ledger-posting';
import { SaleTransaction } from '../db/entities/sale-transaction';
import { payableKey, reverseSale, serviceRefundWindow } from '../finance/sales';
import { reverseCommissionOfOrder } from '../referral/commissions';
import { publicId } from '../ids';
import { loadOrderForUpdate, releaseName, writeStatus } from './fulfilment';
import { loadOrderView } from './order-view';
import { ROW_LOCK } from '../db/row-lock';

export interface RefundView {
  refund_id: string;
  order_id: string;
  /** `pending` only while the registrar has not yet confirmed that the transfer stopped. */
  status: 'succeeded' | 'pending';
  amount_cents: number;
  currency: string;
  reason: string | null;
  created_at: string;
}

export function refundView(refund: Refund, orderPublicId: string): RefundView {
  return {
    refund_id: refund.publicId,
    order_id: orderPublicId,
    status: refund.status,
    amount_cents: refund.amountCents,
    currency: refund.currency,
    reason: refund.reason,
    created_at: refund.createdAt.toISOString(),
  };
}

/** Statuses from which a granted refund may end the order. */
const REFUNDABLE: readonly OrderStatus[] = ['PAYMENT_RECORDED', 'DOMAIN_LOCKED', 'TRANSFER_INITIATED', 'TRANSFER_PENDING', 'TRANSFER_FAILED'];

export class RefundNotAllowed extends Error {
  readonly name = 'RefundNotAllowed';
}

export async function findRefund(manager: EntityManager, orderId: string): Promise<Refund | null> {
  return manager.getRepository(Refund).findOneBy({ orderId });
}

/**
 * Records a refund the workflow granted (or, for an order whose transfer failed, the API).
 * Retried safely: an order that already has its refund answers that refund.
 */
export async function grantRefund(
  dataSource: DataSource,
  input: { orderId: string; refundPublicId: string; reason: string | null; at: string },
): Promise<{ refund: RefundView; created: boolean; event: { partnerId: string; environment: Order['environment'] } }> {
  return dataSource.transaction(async (tx) => {
    const order = await loadOrderForUpdate(tx, input.orderId);
    const event = { partnerId: order.partnerId, environment: order.environment };
    const existing = await findRefund(tx, order.id);
    if (existing) return { refund: refundView(existing, order.publicId), created: false, event };
    if (!REFUNDABLE.includes(order.status)) throw new RefundNotAllowed(`order ${order.publicId} is ${order.status}; it cannot be refunded`);
    // A hosted-checkout sale's window is 30 days from its payment, whichever workflow asks (one
    // restarted after an upgrade, or started late by the sweep); a failed transfer is always refunded.
    if (order.paymentModel === 'service_collected' && order.status !== 'TRANSFER_FAILED' && (await serviceRefundWindow(tx, order.id)).passed) {
      throw new RefundNotAllowed(`order ${order.publicId} was paid more than ${SERVICE_REFUND_WINDOW_DAYS} days ago; its refund window has closed`);
    }

    const view = await refundOrderRow(tx, order, input.refundPublicId, input.reason, new Date(input.at), async (updated) => {
      // After a failed transfer the name was listed again and may have been sold since: only a
      // name this order still holds goes back on the market.
      await releaseName(tx, updated);
    });
    return { refund: view, created: true, event };
  });
}

/**
 * What every refund of an order writes, in the caller's transaction holding the order's lock:
 * the refund row, the order REFUNDED with its timeline entry, the referral commission reversed,
 * what this kind of refund must also undo (`undo`: the name, or the booked sale), and
 * `order.refunded`. Answers the refund.
 */
async function refundOrderRow(tx: EntityManager, order: Order, refundPublicId: string, reason: string | null, at: Date, undo: (updated: Order) => Promise<void>): Promise<RefundView> {
  const refund = await tx.getRepository(Refund).save(
    tx.getRepository(Refund).create({
      publicId: refundPublicId,
      orderId: order.id,
      partnerId: order.partnerId,
      amountCents: order.salePriceCents,
      currency: order.currency,
      reason,
      status: 'succeeded',
      createdAt: at,
    }),
  );
  const updated = await writeStatus(tx, order, 'REFUNDED', at.toISOString(), reason);
  await reverseCommissionOfOrder(tx, order.id, at);
  await undo(updated);
  const view = refundView(refund, order.publicId);
  await appendEvent(tx, {
    partnerId: order.partnerId,
    environment: order.environment,
    type: 'order.refunded',
    data: { ...(await loadOrderView(tx, updated)), refund: view },
    dedupeKey: `order:${order.id}:REFUNDED`,
  });
  return view;
}

/** The refund window of a service-collected sale (CONTRACT §11): 30 days from payment. */
export const SERVICE_REFUND_WINDOW_DAYS = 30;

/**
 * The service refunds a service-collected sale after its transfer completed: the refund row, the
 * order REFUNDED, the booked sale reversed in the ledger (in the period in which this happens),
 * `order.refunded`. The name stays with the buyer; recovering it is an operator's task. Once only.
 */
export async function refundCompletedSale(dataSource: DataSource, orderId: string, reason: string | null, at: Date): Promise<{ refund: RefundView; created: boolean }> {
  return dataSource.transaction(async (tx) => {
    const order = await loadOrderForUpdate(tx, orderId);
    const existing = await findRefund(tx, order.id);
    if (existing) return { refund: refundView(existing, order.publicId), created: false };
    if (order.paymentModel !== 'service_collected' || order.status !== 'TRANSFER_COMPLETED') {
      throw new RefundNotAllowed(`order ${order.publicId} is not a completed service-collected sale`);
    }
    // The window is 30 days from the payment's recorded time, whatever became of the checkout
    // session workflow's timer (a lost signal, a run that never reached it); once the timer has
    // fired, the commission is payable and the sale can no longer be refunded either. The
    // transaction's row lock orders the two.
    const txn = await tx.getRepository(SaleTransaction).createQueryBuilder('t').setLock(ROW_LOCK).where('t.order_id = :orderId', { orderId: order.id }).getOneOrFail();
    if ((await serviceRefundWindow(tx, order.id)).passed || (await tx.getRepository(LedgerPosting).existsBy({ idempotencyKey: payableKey(txn.id) }))) {
      throw new RefundNotAllowed(`order ${order.publicId} was paid more than ${SERVICE_REFUND_WINDOW_DAYS} days ago; its refund window has closed`);
    }
    const view = await refundOrderRow(tx, order, publicId('ref'), reason, at, async () => {
      await reverseSale(tx, (await tx.getRepository(SaleTransaction).findOneByOrFail({ orderId: order.id })).id, at);
    });
    return { refund: view, created: true };
  });
}
