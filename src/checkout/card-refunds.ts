/**
 * The buyer's money back on the card a hosted checkout charged (CONTRACT §9, §11): when the
 * service refunds a service-collected sale, or its transfer fails, the processor refunds the
 * payment and the ledger books it (`card_refund`: `buyer_payments` +A, `service_cash` −A, after
 * the `card_payment` the checkout booked). Called after the refund or failure is committed, never
 * inside a transaction; idempotent, keyed by the order: a retry refunds and books once. The
 * committed order is its own outbox: a crash between the commit and the card's refund leaves an
 * order REFUNDED or TRANSFER_FAILED with no `card_refund`, which the recovery sweep finds
 * (unrefundedBuyers) and refunds within a minute.
 */
import { In, type DataSource, type EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { CheckoutPayment } from '../db/entities/checkout-session';
import { Order } from '../db/entities/order';
import { ACCOUNT, post } from '../finance/ledger';
import { LedgerPosting } from '../db/entities/ledger-posting';
import { SandboxCardProcessor, type PaymentPort } from './payments';

export interface CardRefundDeps {
  dataSource: DataSource;
  /** Card processors per environment; sandbox's simulator over `dataSource` unless given. */
  payments?: Partial<Record<'sandbox' | 'live', PaymentPort>>;
  /** Processors whose own page took the payment (live: Stripe), refunded by the payment's reference. */
  hosted?: Partial<Record<'sandbox' | 'live', Pick<PaymentPort, 'refund'>>>;
}

/** Refunds the buyer of a refunded or failed service-collected order; `none` when there is no card payment to give back. */
export async function refundBuyerCard(deps: CardRefundDeps, orderId: string): Promise<'refunded' | 'none'> {
  const order = await deps.dataSource.getRepository(Order).findOneByOrFail({ id: orderId });
  if (order.paymentModel !== 'service_collected' || !order.checkoutSessionId) return 'none';
  if (order.status !== 'REFUNDED' && order.status !== 'TRANSFER_FAILED') throw new Error(`order ${order.publicId} is ${order.status}: its buyer is not refunded`);
  const payment = await deps.dataSource.getRepository(CheckoutPayment).findOneBy({ sessionId: order.checkoutSessionId });
  if (!payment) return 'none';
  const payments = deps.payments ?? { sandbox: new SandboxCardProcessor(deps.dataSource) };
  const processor = payments[order.environment] ?? deps.hosted?.[order.environment];
  if (!processor) throw new Error(`no card processor for ${order.environment}: the buyer of ${order.publicId} cannot be refunded`);
  // A sale at price 0 charged nothing: there is nothing to give back (a processor refuses a refund
  // of 0), and the reversal is still booked so that the order reads refunded.
  if (payment.amountCents > 0) await processor.refund(payment.paymentRef, payment.amountCents, `refund:${order.id}`);
  await deps.dataSource.transaction((tx) =>
    bookCardMoney(tx, 'card_refund', { partnerId: order.partnerId, environment: order.environment, paymentRef: payment.paymentRef, amountCents: payment.amountCents, currency: payment.currency }),
  );
  return 'refunded';
}

/**
 * refundBuyerCard, after a commit that already decided the refund: a failure (the processor
 * down, none configured) never fails the caller, whose retry could not change it; the committed
 * order stays the outbox and the recovery sweep refunds it (unrefundedBuyers). `left` then.
 */
export async function refundBuyerCardOrLeave(deps: CardRefundDeps, orderId: string, onLeft: (err: Error) => void = () => undefined): Promise<'refunded' | 'none' | 'left'> {
  try {
    return await refundBuyerCard(deps, orderId);
  } catch (err) {
    onLeft(err as Error);
    return 'left';
  }
}

/**
 * Refunded or failed hosted-checkout sales whose buyer's card refund is not booked (the process
 * died between committing the order's status and refunding the card): their order ids, oldest
 * first, at most `limit`.
 */
export async function unrefundedBuyers(dataSource: DataSource, limit = 100): Promise<string[]> {
  const rows = await dataSource
    .getRepository(Order)
    .createQueryBuilder('o')
    .innerJoin(CheckoutPayment, 'cp', 'cp.session_id = o.checkout_session_id')
    .leftJoin(LedgerPosting, 'back', "back.idempotency_key = 'card:' || cp.payment_ref || ':refunded'")
    .select('o.id', 'id')
    .where({ paymentModel: 'service_collected', status: In(['REFUNDED', 'TRANSFER_FAILED']) })
    .andWhere('back.id IS NULL')
    .orderBy('o.created_at', 'ASC')
    .limit(limit)
    .getRawMany<{ id: string }>();
  return rows.map((r) => r.id);
}

/**
 * The buyer's card money in the ledger, once per payment: `card_payment` (the service holds it:
 * `service_cash` +A, `buyer_payments` −A, until the sale is booked) or `card_refund` (given back:
 * the opposite).
 */
export async function bookCardMoney(
  tx: EntityManager,
  kind: 'card_payment' | 'card_refund',
  p: { partnerId: string; environment: Environment; paymentRef: string; amountCents: number; currency: string },
): Promise<void> {
  const sign = kind === 'card_payment' ? 1 : -1;
  await post(tx, {
    idempotencyKey: `card:${p.paymentRef}:${kind === 'card_payment' ? 'paid' : 'refunded'}`,
    partnerId: p.partnerId,
    environment: p.environment,
    kind,
    paymentModel: 'service_collected',
    transactionId: null,
    occurredAt: new Date(),
    currency: p.currency,
    settled: false,
    entries: [
      { account: ACCOUNT.serviceCash, amountCents: sign * p.amountCents },
      { account: ACCOUNT.buyerPayments, amountCents: -sign * p.amountCents },
    ],
  });
}
