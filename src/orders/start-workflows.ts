/** Starting the workflows behind quotes and orders, idempotently (workflow ids from business ids). */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type { Environment } from '../config';
import { orderFulfilmentWorkflow, quoteReservationWorkflow } from '../../workflows';
import { orderWorkflowId, quoteConsumedSignal, quoteWorkflowId } from '../../workflows/messages';
import { BusinessStatus, Domain, Environment as EnvironmentAttr, PartnerId } from '../../workflows/search-attributes';

export interface WorkflowStarter {
  client: Client;
  taskQueue: string;
}

/**
 * A workflow id runs once: a running one is reused, a closed one is never started again (so a
 * retried order cannot start a second fulfilment).
 */
const ONCE = {
  workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
} as const;

async function once(start: () => Promise<unknown>): Promise<void> {
  try {
    await start();
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

export async function startQuoteReservation(
  w: WorkflowStarter,
  quote: { quotePublicId: string; partnerId: string; environment: Environment; domain: string },
): Promise<void> {
  await once(() => w.client.workflow.start(quoteReservationWorkflow, {
    workflowId: quoteWorkflowId(quote.quotePublicId),
    taskQueue: w.taskQueue,
    args: [{ quotePublicId: quote.quotePublicId }],
    ...ONCE,
    typedSearchAttributes: [
      { key: PartnerId, value: quote.partnerId },
      { key: Domain, value: quote.domain },
      { key: EnvironmentAttr, value: quote.environment },
    ],
  }));
}

export async function cancelQuoteReservation(w: WorkflowStarter, quotePublicId: string): Promise<void> {
  await w.client.workflow.getHandle(quoteWorkflowId(quotePublicId)).terminate('the reservation was not taken');
}

/** Tells the quote's workflow that an order consumed it; best effort (its timer would find it consumed anyway). */
export async function signalQuoteConsumed(w: WorkflowStarter, quotePublicId: string): Promise<void> {
  await w.client.workflow.getHandle(quoteWorkflowId(quotePublicId)).signal(quoteConsumedSignal);
}

export async function startOrderFulfilment(
  w: WorkflowStarter,
  order: { orderId: string; orderPublicId: string; partnerId: string; environment: Environment; domain: string },
): Promise<void> {
  await once(() => w.client.workflow.start(orderFulfilmentWorkflow, {
    workflowId: orderWorkflowId(order.orderPublicId),
    taskQueue: w.taskQueue,
    args: [{ orderId: order.orderId, orderPublicId: order.orderPublicId }],
    ...ONCE,
    typedSearchAttributes: [
      { key: PartnerId, value: order.partnerId },
      { key: Domain, value: order.domain },
      { key: EnvironmentAttr, value: order.environment },
      { key: BusinessStatus, value: 'PAYMENT_RECORDED' },
    ],
  }));
}
