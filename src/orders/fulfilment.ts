/**
 * Order status changes made by the fulfilment workflow's activities. Each is one transaction
 * that moves the order only from the statuses it expects, appends the timeline entry (with the
 * workflow's own time) and the event, so a retried activity changes nothing twice and a refund
 * that got there first wins.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { OrderStatus } from '../../workflows/messages';
import { modifiedRows } from '../db/query';
import { appendEvent, type EventType } from '../events/outbox';
import { publicId } from '../ids';
import { commissionCents } from '../money';
import { loadOrderView, type OrderRow } from './order-view';

const EVENT_FOR: Partial<Record<OrderStatus, EventType>> = {
  DOMAIN_LOCKED: 'transfer.domain_locked',
  TRANSFER_INITIATED: 'transfer.initiated',
  TRANSFER_PENDING: 'transfer.pending',
  TRANSFER_COMPLETED: 'transfer.completed',
  TRANSFER_FAILED: 'transfer.failed',
};

/** The statuses each status may be entered from. */
const ENTERED_FROM: Partial<Record<OrderStatus, OrderStatus[]>> = {
  DOMAIN_LOCKED: ['PAYMENT_RECORDED'],
  TRANSFER_INITIATED: ['DOMAIN_LOCKED'],
  TRANSFER_PENDING: ['TRANSFER_INITIATED'],
  TRANSFER_COMPLETED: ['TRANSFER_PENDING'],
  TRANSFER_FAILED: ['PAYMENT_RECORDED', 'DOMAIN_LOCKED', 'TRANSFER_INITIATED', 'TRANSFER_PENDING'],
};

export interface TransitionResult {
  /** The order's status after the call. */
  status: OrderStatus;
  /** True when this call (or an earlier try of it) made the change. */
  applied: boolean;
  /** Whose event history the change wrote to, so the caller can wake its webhook delivery. */
  event?: { partnerId: string; environment: 'sandbox' | 'live' };
}

export async function loadOrderForUpdate(tx: EntityManager, orderId: string): Promise<OrderRow> {
  const [row] = (await tx.query('SELECT * FROM orders WHERE id = $1 FOR UPDATE', [orderId])) as OrderRow[];
  if (!row) throw new Error(`order ${orderId} does not exist`);
  return row;
}

export async function advanceOrder(dataSource: DataSource, input: { orderId: string; to: OrderStatus; at: string; detail?: string }): Promise<TransitionResult> {
  return dataSource.transaction(async (tx) => {
    const order = await loadOrderForUpdate(tx, input.orderId);
    const event = { partnerId: order.partner_id, environment: order.environment };
    if (order.status === input.to) return { status: order.status, applied: true, event };
    if (!ENTERED_FROM[input.to]?.includes(order.status)) return { status: order.status, applied: false };

    const [updated] = await modifiedRows<OrderRow>(tx, `UPDATE orders SET status = $2, failure_reason = $3, updated_at = now() WHERE id = $1 RETURNING *`, [
      order.id,
      input.to,
      input.to === 'TRANSFER_FAILED' ? (input.detail ?? 'transfer failed') : null,
    ]);
    await tx.query(`INSERT INTO order_timeline (order_id, status, at, detail) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
      order.id,
      input.to,
      input.at,
      input.detail ?? null,
    ]);
    if (input.to === 'TRANSFER_COMPLETED') await recordSale(tx, updated, input.at);
    if (input.to === 'TRANSFER_FAILED') {
      await tx.query(`UPDATE domains SET status = 'listed', updated_at = now() WHERE id = $1 AND status = 'sold'`, [order.domain_id]);
    }
    const type = EVENT_FOR[input.to];
    if (type) {
      await appendEvent(tx, {
        partnerId: order.partner_id,
        environment: order.environment,
        type,
        data: await loadOrderView(tx, updated),
        dedupeKey: `order:${order.id}:${input.to}`,
      });
    }
    return { status: input.to, applied: true, event };
  });
}

/**
 * The sale becomes a transaction with its ledger entries (CONTRACT §8): for a partner-collected
 * sale the partner keeps its commission and owes the service the rest.
 */
async function recordSale(tx: EntityManager, order: OrderRow, at: string): Promise<void> {
  const [partner] = (await tx.query('SELECT commission_partner_collected_bps, commission_service_collected_bps FROM partners WHERE id = $1', [order.partner_id])) as Array<{
    commission_partner_collected_bps: number;
    commission_service_collected_bps: number;
  }>;
  const gross = Number(order.sale_price_cents);
  const bps = order.payment_model === 'partner_collected' ? partner.commission_partner_collected_bps : partner.commission_service_collected_bps;
  const commission = commissionCents(gross, bps);
  const [txn] = (await tx.query(
    `INSERT INTO transactions (public_id, partner_id, environment, order_id, domain, payment_model, gross_cents, commission_cents, currency, occurred_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (order_id) DO NOTHING RETURNING id`,
    [publicId('txn'), order.partner_id, order.environment, order.id, order.domain, order.payment_model, gross, commission, order.currency, at],
  )) as Array<{ id: string }>;
  if (!txn) return;
  const entries =
    order.payment_model === 'partner_collected'
      ? [
          ['partner_owes_service', gross - commission],
          ['partner_commission_retained', commission],
        ]
      : [['service_owes_partner', commission]];
  for (const [account, amount] of entries) {
    await tx.query(
      `INSERT INTO ledger_entries (partner_id, environment, transaction_id, account, amount_cents, currency) VALUES ($1, $2, $3, $4, $5, $6)`,
      [order.partner_id, order.environment, txn.id, account, amount, order.currency],
    );
  }
}
