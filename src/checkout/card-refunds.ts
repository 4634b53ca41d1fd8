/**
 * The buyer's money back on the card a hosted checkout charged (CONTRACT §9, §11): when the
 * service refunds a service-collected sale, or its transfer fails, the processor refunds the
 * payment and the ledger books it (`card_refund`: `buyer_payments` +A, `service_cash` −A, after
 * the `card_payment` the checkout booked). Called after the refund or failure is committed, never
 * inside a transaction; idempotent, keyed by the order: a retry refunds and books once.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { CheckoutPayment } from '../db/entities/checkout-session';
import { Order } from '../db/entities/order';
import { ACCOUNT, post } from '../finance/ledger';
import { SandboxCardProcessor, type PaymentPort } from './payments';

export interface CardRefundDeps {
  dataSource: DataSource;
  /** Card processors per environment; sandbox's simulator over `dataSource` unless given. */
  payments?: Partial<Record<'sandbox' | 'live', PaymentPort>>;
}

/** Refunds the buyer of a refunded or failed service-collected order; `none` when there is no card payment to give back. */
export async function refundBuyerCard(deps: CardRefundDeps, orderId: string): Promise<'refunded' | 'none'> {
  const order = await deps.dataSource.getRepository(Order).findOneByOrFail({ id: orderId });
  if (order.paymentModel !== 'service_collected' || !order.checkoutSessionId) return 'none';
  if (order.status !== 'REFUNDED' && order.status !== 'TRANSFER_FAILED') throw new Error(`order ${order.publicId} is ${order.status}: its buyer is not refunded`);
  const payment = await deps.dataSource.getRepository(CheckoutPayment).findOneBy({ sessionId: order.checkoutSessionId });
  if (!payment) return 'none';
  const payments = deps.payments ?? { sandbox: new SandboxCardProcessor(deps.dataSource) };
  const processor = payments[order.environment];
  if (!processor) throw new Error(`no card processor for ${order.environment}: the buyer of ${order.publicId} cannot be refunded`);
  await processor.refund(payment.paymentRef, payment.amountCents, `refund:${order.id}`);
  await deps.dataSource.transaction((tx) =>
    bookCardMoney(tx, 'card_refund', { partnerId: order.partnerId, environment: order.environment, paymentRef: payment.paymentRef, amountCents: payment.amountCents, currency: payment.currency }),
  );
  return 'refunded';
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
