/** The order as partners see it (CONTRACT §6), read from the read model. */
import type { EntityManager } from 'typeorm';
import type { OrderStatus } from '../../workflows/messages';

export interface OrderView {
  public_id: string;
  status: OrderStatus;
  domain: string;
  sale_price_cents: number;
  currency: string;
  external_payment_ref: string;
  payment_model: 'partner_collected' | 'service_collected';
  created_at: string;
  updated_at: string;
  failure_reason: string | null;
  timeline: Array<{ status: OrderStatus; at: string; detail?: string }>;
}

export interface OrderRow {
  id: string;
  public_id: string;
  partner_id: string;
  environment: 'sandbox' | 'live';
  quote_id: string | null;
  domain_id: string;
  domain: string;
  sale_price_cents: string;
  currency: string;
  external_payment_ref: string;
  payment_model: 'partner_collected' | 'service_collected';
  status: OrderStatus;
  failure_reason: string | null;
  workflow_started: boolean;
  created_at: Date;
  updated_at: Date;
}

export async function loadOrderView(manager: EntityManager, order: OrderRow): Promise<OrderView> {
  const timeline = (await manager.query('SELECT status, at, detail FROM order_timeline WHERE order_id = $1 ORDER BY at, status', [order.id])) as Array<{
    status: OrderStatus;
    at: Date;
    detail: string | null;
  }>;
  return {
    public_id: order.public_id,
    status: order.status,
    domain: order.domain,
    sale_price_cents: Number(order.sale_price_cents),
    currency: order.currency,
    external_payment_ref: order.external_payment_ref,
    payment_model: order.payment_model,
    created_at: order.created_at.toISOString(),
    updated_at: order.updated_at.toISOString(),
    failure_reason: order.failure_reason,
    timeline: timeline.map((t) => ({ status: t.status, at: t.at.toISOString(), ...(t.detail ? { detail: t.detail } : {}) })),
  };
}
