/**
 * Refunds of partner-collected orders, only before TRANSFER_COMPLETED. The decision is one
 * transaction on the order's row lock, the same lock the transfer's last step takes, so a refund
 * racing completion has exactly one winner: the refund (order REFUNDED, domain listed again) or
 * the completion (422 refund_not_allowed).
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { ApiError } from '../api/errors';
import { modifiedRows } from '../db/query';
import { appendEvent } from '../events/outbox';
import { publicId } from '../ids';
import { loadOrderView, type OrderRow } from './order-view';

export interface RefundView {
  refund_id: string;
  order_id: string;
  status: 'succeeded';
  amount_cents: number;
  currency: string;
  reason: string | null;
  created_at: string;
}

interface RefundRow {
  public_id: string;
  amount_cents: string;
  currency: string;
  reason: string | null;
  status: 'succeeded';
  created_at: Date;
}

function view(row: RefundRow, orderPublicId: string): RefundView {
  return {
    refund_id: row.public_id,
    order_id: orderPublicId,
    status: row.status,
    amount_cents: Number(row.amount_cents),
    currency: row.currency,
    reason: row.reason,
    created_at: row.created_at.toISOString(),
  };
}

export async function requestRefund(
  dataSource: DataSource,
  input: { partnerId: string; environment: Environment; orderPublicId: string; reason?: string; at?: Date },
): Promise<{ refund: RefundView; created: boolean; orderId: string }> {
  return dataSource.transaction(async (tx) => {
    const [order] = (await tx.query('SELECT * FROM orders WHERE public_id = $1 AND partner_id = $2 AND environment = $3 FOR UPDATE', [
      input.orderPublicId,
      input.partnerId,
      input.environment,
    ])) as OrderRow[];
    if (!order) throw new ApiError('not_found', `no order ${input.orderPublicId}`);
    const [existing] = (await tx.query('SELECT * FROM refunds WHERE order_id = $1', [order.id])) as RefundRow[];
    if (existing) return { refund: view(existing, order.public_id), created: false, orderId: order.id };
    if (order.payment_model !== 'partner_collected') {
      throw new ApiError('refund_not_allowed', 'only partner-collected orders are refunded through this endpoint');
    }
    if (order.status === 'TRANSFER_COMPLETED') {
      throw new ApiError('refund_not_allowed', `order ${order.public_id} reached TRANSFER_COMPLETED; refunds are possible only before that`);
    }
    const at = input.at ?? new Date();
    const [refund] = (await tx.query(
      `INSERT INTO refunds (public_id, order_id, partner_id, amount_cents, currency, reason, status, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'succeeded', $7) RETURNING *`,
      [publicId('ref'), order.id, order.partner_id, order.sale_price_cents, order.currency, input.reason ?? null, at],
    )) as RefundRow[];
    const [updated] = await modifiedRows<OrderRow>(tx, `UPDATE orders SET status = 'REFUNDED', updated_at = now() WHERE id = $1 RETURNING *`, [order.id]);
    await tx.query(`INSERT INTO order_timeline (order_id, status, at, detail) VALUES ($1, 'REFUNDED', $2, $3) ON CONFLICT DO NOTHING`, [order.id, at, input.reason ?? null]);
    await tx.query(`UPDATE domains SET status = 'listed', updated_at = now() WHERE id = $1 AND status = 'sold'`, [order.domain_id]);
    await appendEvent(tx, {
      partnerId: order.partner_id,
      environment: order.environment,
      type: 'order.refunded',
      data: { ...(await loadOrderView(tx, updated)), refund: view(refund, order.public_id) },
      dedupeKey: `order:${order.id}:REFUNDED`,
    });
    return { refund: view(refund, order.public_id), created: true, orderId: order.id };
  });
}
