/**
 * The buyer's money back on the card a hosted checkout charged (CONTRACT §9, §11): when the
 * service refunds a service-collected sale, or its transfer fails, the processor refunds the
 * payment and the ledger books it (`card_refund`: `buyer_payments` +A, `service_cash` −A, after
 * the `card_payment` the checkout booked). Called after the refund or failure is committed, never
 * inside a transaction; idempotent, keyed by the order: a retry refunds and books once.
 */
import type { DataSource } from 'typeorm';
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
    post(tx, {
      idempotencyKey: `card:${payment.paymentRef}:refunded`,
      partnerId: order.partnerId,
      environment: order.environment,
      kind: 'card_refund',
      paymentModel: 'service_collected',
      transactionId: null,
      occurredAt: new Date(),
      currency: payment.currency,
      settled: false,
      entries: [
        { account: ACCOUNT.buyerPayments, amountCents: payment.amountCents },
        { account: ACCOUNT.serviceCash, amountCents: -payment.amountCents },
      ],
    }),
  );
  return 'refunded';
}
