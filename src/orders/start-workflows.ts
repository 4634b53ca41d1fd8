/** Starting the workflows behind quotes and orders, idempotently (workflow ids from business ids). */
import type { Environment } from '../config';
import { orderWorkflowId, quoteConsumedSignal, quoteWorkflowId } from '../../workflows/messages';
import { startWorkflow, type WorkflowStarter } from '../temporal/start';

export async function startQuoteReservation(
  w: WorkflowStarter,
  quote: { quotePublicId: string; partnerId: string; environment: Environment; domain: string },
): Promise<void> {
  await startWorkflow(w, 'quoteReservationWorkflow', {
    workflowId: quoteWorkflowId(quote.quotePublicId),
    args: [{ quotePublicId: quote.quotePublicId }],
    mode: 'once',
    summary: `Quote ${quote.quotePublicId} ${quote.domain} for partner ${quote.partnerId} (${quote.environment})`,
    details: `The name is reserved for 10 minutes unless an order consumes the quote first.`,
    attributes: { partnerId: quote.partnerId, domain: quote.domain, environment: quote.environment },
  });
}

/** Ends the reservation of a quote that lost its race and was never written (a cancel, not a termination). */
export async function cancelQuoteReservation(w: WorkflowStarter, quotePublicId: string): Promise<void> {
  await w.client.workflow.getHandle(quoteWorkflowId(quotePublicId)).cancel();
}

/** Tells the quote's workflow that an order consumed it; best effort (its timer would find it consumed anyway). */
export async function signalQuoteConsumed(w: WorkflowStarter, quotePublicId: string): Promise<void> {
  await w.client.workflow.getHandle(quoteWorkflowId(quotePublicId)).signal(quoteConsumedSignal);
}

export async function startOrderFulfilment(
  w: WorkflowStarter,
  order: { orderId: string; orderPublicId: string; partnerId: string; environment: Environment; domain: string; serviceCollected?: boolean },
): Promise<void> {
  await startWorkflow(w, 'orderFulfilmentWorkflow', {
    workflowId: orderWorkflowId(order.orderPublicId),
    args: [{ orderId: order.orderId, orderPublicId: order.orderPublicId, ...(order.serviceCollected ? { serviceCollected: true } : {}) }],
    mode: 'once',
    summary: `Order ${order.orderPublicId} ${order.domain} for partner ${order.partnerId} (${order.environment})`,
    details: [
      `Transfers ${order.domain} to the buyer; BusinessStatus is the order's status.`,
      `A live transfer waiting for an operator: \`npm run --silent admin -- order transfer-completed|transfer-failed ${order.orderPublicId} --json\`.`,
    ].join('\n\n'),
    attributes: { partnerId: order.partnerId, domain: order.domain, environment: order.environment, businessStatus: 'PAYMENT_RECORDED' },
  });
}
