/** The order as partners see it (CONTRACT §6), read from the read model. */
import type { EntityManager } from 'typeorm';
import type { OrderStatus } from '../../workflows/messages';
import type { Order, PaymentModel } from '../db/entities/order';
import { OrderTimelineEntry } from '../db/entities/order-timeline-entry';

export interface OrderView {
  public_id: string;
  status: OrderStatus;
  domain: string;
  sale_price_cents: number;
  currency: string;
  external_payment_ref: string;
  payment_model: PaymentModel;
  created_at: string;
  updated_at: string;
  failure_reason: string | null;
  /** The partner's reference from its checkout session (service-collected sales), else null. */
  client_reference_id: string | null;
  timeline: Array<{ status: OrderStatus; at: string; detail?: string }>;
}

export async function loadOrderView(manager: EntityManager, order: Order): Promise<OrderView> {
  return orderView(order, await manager.getRepository(OrderTimelineEntry).find({ where: { orderId: order.id }, order: { at: 'ASC', status: 'ASC' } }));
}

/** The view of an order whose timeline entries (oldest first) the caller has. */
export function orderView(order: Order, timeline: Array<Pick<OrderTimelineEntry, 'status' | 'at' | 'detail'>>): OrderView {
  return {
    public_id: order.publicId,
    status: order.status,
    domain: order.domain,
    sale_price_cents: order.salePriceCents,
    currency: order.currency,
    external_payment_ref: order.externalPaymentRef,
    payment_model: order.paymentModel,
    created_at: order.createdAt.toISOString(),
    updated_at: order.updatedAt.toISOString(),
    failure_reason: order.failureReason,
    client_reference_id: order.clientReferenceId,
    timeline: timeline.map((t) => ({ status: t.status, at: t.at.toISOString(), ...(t.detail ? { detail: t.detail } : {}) })),
  };
}
