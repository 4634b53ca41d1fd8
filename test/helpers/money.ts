/** Fixtures for the money tests: orders recorded straight into the read model, then completed by the real booking step. */
import { randomUUID } from 'node:crypto';
import { Domain } from '../../src/db/entities/domain';
import { Order, type PaymentModel } from '../../src/db/entities/order';
import { advanceOrder } from '../../src/orders/fulfilment';
import { makeCommissionPayable } from '../../src/finance/sales';
import { getStack } from './stack';

/** An order waiting at TRANSFER_PENDING (no workflow), as fulfilment leaves it before completion. */
export async function pendingOrder(partnerId: string, options: { paymentModel?: PaymentModel; priceCents?: number; commissionBps?: number; currency?: string; environment?: Order['environment'] } = {}): Promise<Order> {
  const s = getStack();
  const domain = await s.dataSource.getRepository(Domain).findOneByOrFail({ environment: 'sandbox', name: 'academy.com' });
  const orders = s.dataSource.getRepository(Order);
  return orders.save(
    orders.create({
      publicId: `ord_fixture${randomUUID().replace(/-/g, '').slice(0, 16)}`,
      partnerId,
      environment: options.environment ?? 'sandbox',
      quoteId: null,
      domainId: domain.id,
      domain: `fixture-${randomUUID().slice(0, 8)}.com`,
      salePriceCents: options.priceCents ?? 100_000,
      currency: options.currency ?? 'USD',
      externalPaymentRef: 'pay_fixture',
      paymentModel: options.paymentModel ?? 'partner_collected',
      commissionBps: options.commissionBps ?? 1500,
      status: 'TRANSFER_PENDING',
      failureReason: null,
      workflowStarted: true,
    }),
  );
}

/** A sale completed (and booked) at `at`, through the same step the fulfilment workflow runs. */
export async function completedSale(partnerId: string, at: string, options: Parameters<typeof pendingOrder>[1] = {}): Promise<Order> {
  const order = await pendingOrder(partnerId, options);
  const result = await advanceOrder(getStack().dataSource, { orderId: order.id, to: 'TRANSFER_COMPLETED', at });
  if (result.status !== 'TRANSFER_COMPLETED') throw new Error(`order ${order.publicId} did not complete`);
  return order;
}

/**
 * What a hosted-checkout sale's workflow does when its 30-day refund window ends (the checkout
 * session's timer): the commission becomes payable. For fixtures booked without that workflow.
 */
export async function refundWindowPassed(order: Pick<Order, 'id'>, at = new Date()): Promise<void> {
  const outcome = await makeCommissionPayable(getStack().dataSource, order.id, at);
  if (outcome !== 'payable') throw new Error(`order ${order.id}: commission ${outcome}`);
}
