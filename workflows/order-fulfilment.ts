/**
 * Fulfilment of a sold domain (id `order:<public_id>`): the hand-over an aftermarket sale needs.
 *
 *   PAYMENT_RECORDED   the partner charged its buyer; the order is recorded (by the API)
 *   DOMAIN_LOCKED      the name is locked at the seller's registrar so nothing changes it
 *   TRANSFER_INITIATED the auth code is obtained and the transfer to the buyer requested
 *   TRANSFER_PENDING   the registry is processing; polled every 15 s, backing off to hourly
 *   TRANSFER_COMPLETED the registry confirmed; the sale is booked (transaction + ledger)
 *   TRANSFER_FAILED    the registry rejected it, or did not confirm within 5 days
 *   REFUNDED           a refund won before completion; the transfer is stopped
 *
 * Registrar calls are retried with back-off (transient failures show as activity attempts in the
 * Temporal UI); a rejection is final. Each status change is one activity that moves the order
 * only from the status it expects, so a refund that got there first makes the step a no-op and
 * the workflow stops the transfer instead.
 */
import { ActivityFailure, ApplicationFailure, condition, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { refundRequestedSignal, type OrderFulfilmentInput, type OrderFulfilmentResult, type OrderStatus } from './messages';
import { BusinessStatus } from './search-attributes';

export const TRANSFER_DEADLINE_MS = 5 * 24 * 60 * 60 * 1000;
const FIRST_POLL_MS = 15_000;
const MAX_POLL_MS = 60 * 60 * 1000;

const registrar = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes', nonRetryableErrorTypes: ['TransferRejected'] },
});
const orders = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

function rejection(err: unknown): string | undefined {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'TransferRejected') return err.cause.message;
  return undefined;
}

export async function orderFulfilmentWorkflow(input: OrderFulfilmentInput): Promise<OrderFulfilmentResult> {
  const { orderId } = input;
  let refundRequested = false;
  setHandler(refundRequestedSignal, () => {
    refundRequested = true;
  });

  /** Moves the order to `to` with this workflow's clock; false when the order is elsewhere (refunded). */
  const advance = async (to: OrderStatus, detail?: string): Promise<OrderStatus> => {
    const result = await orders.advanceOrder({ orderId, to, at: new Date().toISOString(), detail });
    upsertSearchAttributes([{ key: BusinessStatus, value: result.status }]);
    return result.status;
  };
  const stopped = async (status: OrderStatus): Promise<OrderFulfilmentResult> => {
    if (status === 'REFUNDED') await registrar.cancelTransfer({ orderId });
    return { status };
  };
  const fail = async (reason: string): Promise<OrderFulfilmentResult> => {
    const status = await advance('TRANSFER_FAILED', reason);
    if (status !== 'TRANSFER_FAILED') return stopped(status);
    await registrar.cancelTransfer({ orderId });
    return { status, reason };
  };

  try {
    await registrar.lockDomain({ orderId });
    let status = await advance('DOMAIN_LOCKED');
    if (status !== 'DOMAIN_LOCKED') return stopped(status);

    const transferRef = await registrar.requestTransfer({ orderId });
    status = await advance('TRANSFER_INITIATED', `transfer ${transferRef}`);
    if (status !== 'TRANSFER_INITIATED') return stopped(status);
    status = await advance('TRANSFER_PENDING');
    if (status !== 'TRANSFER_PENDING') return stopped(status);

    const deadline = Date.now() + TRANSFER_DEADLINE_MS;
    let pollMs = FIRST_POLL_MS;
    for (let polls = 0; ; polls++) {
      // A refund signal ends the wait at once; otherwise poll the registry.
      if (await condition(() => refundRequested, pollMs)) break;
      const state = await registrar.checkTransfer({ orderId });
      if (state === 'completed') break;
      if (state === 'rejected' || state === 'cancelled') return fail(`the registry reported the transfer ${state}`);
      if (Date.now() >= deadline) return fail('the registry did not confirm the transfer within 5 days');
      if (polls >= 8) pollMs = Math.min(pollMs * 2, MAX_POLL_MS);
    }

    status = await advance('TRANSFER_COMPLETED');
    if (status !== 'TRANSFER_COMPLETED') return stopped(status);
    return { status };
  } catch (err) {
    const reason = rejection(err);
    if (reason) return fail(reason);
    throw err;
  }
}
