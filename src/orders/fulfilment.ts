/**
 * Order status changes made by the fulfilment workflow's activities. Each is one transaction
 * that moves the order only from the statuses it expects, appends the timeline entry (with the
 * workflow's own time) and the event, so a retried activity changes nothing twice.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { FINAL_ORDER_STATUSES, type OrderStatus } from '../../workflows/messages';
import type { Environment } from '../config';
import { Domain } from '../db/entities/domain';
import { Order } from '../db/entities/order';
import { OrderTimelineEntry } from '../db/entities/order-timeline-entry';
import { appendEvent, type EventType } from '../events/outbox';
import { bookSale } from '../finance/sales';
import { reverseCommissionOfOrder } from '../referral/commissions';
import { loadOrderView } from './order-view';
import { fulfilmentOutcomes } from '../metrics/metrics';
import { ROW_LOCK } from '../db/row-lock';

const EVENT_FOR: Partial<Record<OrderStatus, EventType>> = {
  DOMAIN_LOCKED: 'transfer.domain_locked',
  TRANSFER_INITIATED: 'transfer.initiated',
  TRANSFER_PENDING: 'transfer.pending',
  TRANSFER_COMPLETED: 'transfer.completed',
  TRANSFER_FAILED: 'transfer.failed',
};

/** The statuses each status may be entered from (an operator-run transfer goes straight to pending). */
const ENTERED_FROM: Partial<Record<OrderStatus, OrderStatus[]>> = {
  DOMAIN_LOCKED: ['PAYMENT_RECORDED'],
  TRANSFER_INITIATED: ['DOMAIN_LOCKED'],
  TRANSFER_PENDING: ['TRANSFER_INITIATED', 'PAYMENT_RECORDED'],
  TRANSFER_COMPLETED: ['TRANSFER_PENDING'],
  TRANSFER_FAILED: ['PAYMENT_RECORDED', 'DOMAIN_LOCKED', 'TRANSFER_INITIATED', 'TRANSFER_PENDING'],
};

export interface TransitionResult {
  /** The order's status after the call. */
  status: OrderStatus;
  /** True when this call (or an earlier try of it) made the change. */
  applied: boolean;
  /** Whose event history the change wrote to, so the caller can wake its webhook delivery. */
  event?: { partnerId: string; environment: Environment };
}

export async function loadOrderForUpdate(tx: EntityManager, orderId: string): Promise<Order> {
  return tx.getRepository(Order).createQueryBuilder('o').setLock(ROW_LOCK).where('o.id = :orderId', { orderId }).getOneOrFail();
}

/** Puts the name back on the market if, and only if, this order still holds it. */
export async function releaseName(tx: EntityManager, order: Order): Promise<boolean> {
  const result = await tx.getRepository(Domain).update({ id: order.domainId, heldByOrderId: order.id }, { status: 'listed', heldByOrderId: null });
  return (result.affected ?? 0) > 0;
}

/** Writes a new status with its timeline entry; returns the updated order. */
export async function writeStatus(tx: EntityManager, order: Order, to: OrderStatus, at: string, detail: string | null): Promise<Order> {
  const changes = { status: to, failureReason: to === 'TRANSFER_FAILED' ? (detail ?? 'transfer failed') : order.failureReason, updatedAt: new Date() };
  await tx.getRepository(Order).update({ id: order.id }, changes);
  await tx.getRepository(OrderTimelineEntry).createQueryBuilder().insert().values({ orderId: order.id, status: to, at: new Date(at), detail }).orIgnore().execute();
  return Object.assign(order, changes);
}

export async function advanceOrder(dataSource: DataSource, input: { orderId: string; to: OrderStatus; at: string; detail?: string }): Promise<TransitionResult> {
  return dataSource.transaction(async (tx) => {
    const order = await loadOrderForUpdate(tx, input.orderId);
    const event = { partnerId: order.partnerId, environment: order.environment };
    if (order.status === input.to) return { status: order.status, applied: true, event };
    if (!ENTERED_FROM[input.to]?.includes(order.status)) return { status: order.status, applied: false };

    const updated = await writeStatus(tx, order, input.to, input.at, input.detail ?? null);
    if ((FINAL_ORDER_STATUSES as readonly string[]).includes(input.to)) fulfilmentOutcomes.inc({ environment: order.environment, status: input.to });
    if (input.to === 'TRANSFER_COMPLETED') await bookSale(tx, updated, new Date(input.at));
    if (input.to === 'TRANSFER_FAILED') {
      await releaseName(tx, updated);
      // A sale that did not happen earns no referral commission.
      await reverseCommissionOfOrder(tx, order.id, new Date(input.at));
    }
    const type = EVENT_FOR[input.to];
    if (type) {
      await appendEvent(tx, {
        partnerId: order.partnerId,
        environment: order.environment,
        type,
        data: await loadOrderView(tx, updated),
        dedupeKey: `order:${order.id}:${input.to}`,
      });
    }
    return { status: input.to, applied: true, event };
  });
}
