/**
 * Disputes (chargebacks) of live card payments (CONTRACT §7, §9), from the processor's events. A
 * buyer's bank can pull a payment back weeks after the name moved:
 * - opened: the order is flagged (a `card_disputes` row), the disputed amount moves out of the
 *   service's cash into `disputes_held` (`dispute_opened`), the partner gets `order.dispute_opened`;
 * - won: the amount comes back (`dispute_won`);
 * - lost: it goes to the buyer (`dispute_lost`: `disputes_held` −A, `buyer_payments` +A, as a card
 *   refund gives it), the sale is reversed as a refund is (its commission taken back, from what the
 *   service owes the partner once payable) and any referral commission with it.
 * Either close sends `order.dispute_closed` with `dispute.outcome`. Each step once per dispute, in
 * one transaction with its postings and event.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { CardDispute, type DisputeStatus } from '../db/entities/card-dispute';
import { CheckoutPayment } from '../db/entities/checkout-session';
import { Order } from '../db/entities/order';
import { SaleTransaction } from '../db/entities/sale-transaction';
import { appendEvent } from '../events/outbox';
import { ACCOUNT, post, type NewPosting } from '../finance/ledger';
import { reverseSale } from '../finance/sales';
import { publicId } from '../ids';
import { loadOrderView } from '../orders/order-view';
import { reverseCommissionOfOrder } from '../referral/commissions';
import { ROW_LOCK } from '../db/row-lock';

export interface DisputeView {
  dispute_id: string;
  status: DisputeStatus;
  outcome: 'won' | 'lost' | null;
  amount_cents: number;
  currency: string;
  reason: string | null;
  opened_at: string;
  closed_at: string | null;
}

export function disputeView(d: CardDispute): DisputeView {
  return {
    dispute_id: d.publicId,
    status: d.status,
    outcome: d.status === 'open' ? null : d.status,
    amount_cents: d.amountCents,
    currency: d.currency,
    reason: d.reason,
    opened_at: d.openedAt.toISOString(),
    closed_at: d.closedAt?.toISOString() ?? null,
  };
}

/** A dispute's posting: its amount between two accounts, once per dispute and step. */
function disputePosting(d: CardDispute, step: 'opened' | 'won' | 'lost', at: Date, from: NewPosting['entries'][number]['account'], to: NewPosting['entries'][number]['account']): NewPosting {
  return {
    idempotencyKey: `dispute:${d.id}:${step}`,
    partnerId: d.partnerId,
    environment: d.environment,
    kind: `dispute_${step}`,
    paymentModel: 'service_collected',
    transactionId: null,
    occurredAt: at,
    currency: d.currency,
    settled: false,
    entries: [
      { account: to, amountCents: d.amountCents },
      { account: from, amountCents: -d.amountCents },
    ],
  };
}

async function lockOrder(tx: EntityManager, orderId: string): Promise<Order> {
  return tx.getRepository(Order).createQueryBuilder('o').setLock(ROW_LOCK).where('o.id = :orderId', { orderId }).getOneOrFail();
}

/** `charge.dispute.created`: answers what it did (`known`: this dispute was opened before). */
export async function openDispute(
  dataSource: DataSource,
  notice: { processorDisputeId: string; paymentRef: string; amountCents: number; currency: string; reason: string | null; at: Date },
): Promise<'opened' | 'known' | 'unknown_payment'> {
  return dataSource.transaction(async (tx) => {
    const payment = await tx.getRepository(CheckoutPayment).findOneBy({ paymentRef: notice.paymentRef });
    const found = payment && (await tx.getRepository(Order).findOneBy({ checkoutSessionId: payment.sessionId }));
    if (!found) return 'unknown_payment';
    const order = await lockOrder(tx, found.id);
    const inserted = await tx
      .getRepository(CardDispute)
      .createQueryBuilder()
      .insert()
      .values({ publicId: publicId('dsp'), processorDisputeId: notice.processorDisputeId, orderId: order.id, partnerId: order.partnerId, environment: order.environment, amountCents: notice.amountCents, currency: notice.currency.toUpperCase(), status: 'open', reason: notice.reason, openedAt: notice.at })
      .orIgnore()
      .returning(['id'])
      .execute();
    if ((inserted.raw as unknown[]).length === 0) return 'known';
    const dispute = await tx.getRepository(CardDispute).findOneByOrFail({ processorDisputeId: notice.processorDisputeId });
    await post(tx, disputePosting(dispute, 'opened', notice.at, ACCOUNT.serviceCash, ACCOUNT.disputesHeld));
    await appendEvent(tx, {
      partnerId: order.partnerId,
      environment: order.environment,
      type: 'order.dispute_opened',
      data: { ...(await loadOrderView(tx, order)), dispute: disputeView(dispute) },
      dedupeKey: `dispute:${dispute.id}:opened`,
    });
    return 'opened';
  });
}

/** `charge.dispute.closed`: answers what it did (`already`: it was closed before; `unknown`: never opened here). */
export async function closeDispute(dataSource: DataSource, processorDisputeId: string, outcome: 'won' | 'lost', at: Date): Promise<'closed' | 'already' | 'unknown'> {
  return dataSource.transaction(async (tx) => {
    const found = await tx.getRepository(CardDispute).findOneBy({ processorDisputeId });
    if (!found) return 'unknown';
    const order = await lockOrder(tx, found.orderId);
    const dispute = await tx.getRepository(CardDispute).createQueryBuilder('d').setLock(ROW_LOCK).where('d.id = :id', { id: found.id }).getOneOrFail();
    if (dispute.status !== 'open') return 'already';
    if (outcome === 'won') {
      await post(tx, disputePosting(dispute, 'won', at, ACCOUNT.disputesHeld, ACCOUNT.serviceCash));
    } else {
      await post(tx, disputePosting(dispute, 'lost', at, ACCOUNT.disputesHeld, ACCOUNT.buyerPayments));
      const txn = await tx.getRepository(SaleTransaction).findOneBy({ orderId: order.id });
      if (txn) await reverseSale(tx, txn.id, at);
      await reverseCommissionOfOrder(tx, order.id, at);
    }
    await tx.getRepository(CardDispute).update({ id: dispute.id }, { status: outcome, closedAt: at });
    await appendEvent(tx, {
      partnerId: order.partnerId,
      environment: order.environment,
      type: 'order.dispute_closed',
      data: { ...(await loadOrderView(tx, order)), dispute: disputeView({ ...dispute, status: outcome, closedAt: at }) },
      dedupeKey: `dispute:${dispute.id}:closed`,
    });
    return 'closed';
  });
}

/** Open disputes, oldest first (`admin disputes list`; the worker's gauge counts them). */
export async function openDisputes(dataSource: DataSource, environment?: 'sandbox' | 'live'): Promise<Array<DisputeView & { order_id: string; partner_id: string; environment: string }>> {
  const rows = await dataSource.getRepository(CardDispute).find({ where: { status: 'open', ...(environment ? { environment } : {}) }, order: { openedAt: 'ASC' } });
  const orders = new Map((rows.length ? await dataSource.getRepository(Order).find({ select: { id: true, publicId: true }, where: rows.map((r) => ({ id: r.orderId })) }) : []).map((o) => [o.id, o.publicId]));
  return rows.map((d) => ({ ...disputeView(d), order_id: orders.get(d.orderId) ?? d.orderId, partner_id: d.partnerId, environment: d.environment }));
}
