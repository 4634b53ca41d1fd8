/**
 * Fulfilment of a sold domain (id `order:<public_id>`): the hand-over an aftermarket sale needs,
 * and the one place that decides refunds, because it is the one place that knows where the
 * transfer stands.
 *
 *   PAYMENT_RECORDED   the partner charged its buyer; the order is recorded (by the API)
 *   DOMAIN_LOCKED      the name is locked at the seller's registrar so nothing changes it
 *   TRANSFER_INITIATED the auth code is obtained and the transfer to the buyer requested
 *   TRANSFER_PENDING   the registry is processing; polled every 15 s, backing off to hourly.
 *                      Without a registrar adapter (live, today) the order goes here at once and
 *                      waits for an operator's recordTransferOutcome Update (BusinessStatus
 *                      AWAITING_OPERATOR), reminding operators after 1 hour and then every 24 hours for two weeks
 *   TRANSFER_COMPLETED the registry confirmed; the sale is booked (transaction + ledger)
 *   TRANSFER_FAILED    the registry rejected it, or did not confirm within 5 days
 *   REFUNDED           a refund was granted; the name is back on the market if the order held it
 *
 * Refunds arrive as the `refund` Update. Before a transfer is requested the refund is granted at
 * once. While one is in flight the registrar is asked to cancel and the refund is granted only
 * once it confirms; if the registry completed first, the order completes and the refund is
 * refused. Registrar calls are retried with back-off (attempts show in the Temporal UI); a
 * rejection is final.
 */
import { fastForwardable } from './fast-forward';
import { ActivityFailure, allHandlersFinished, ApplicationFailure, condition, patched, proxyActivities, setCurrentDetails, setHandler, setWorkflowOptions, sleep, TimeoutFailure, workflowInfo } from '@temporalio/workflow';
import { RetryState, TimeoutType } from '@temporalio/common';
import { onVersionedWorker } from './versioning';
import { PATCHES } from './patches';
import type { Activities } from '../activities';
import {
  fulfilmentStateQuery,
  NOT_AWAITING_OPERATOR,
  ORDER_ENDED,
  REFUND_NOT_ALLOWED,
  refundUpdate,
  transferOutcomeUpdate,
  type OrderFulfilmentInput,
  type OrderFulfilmentResult,
  type OrderStatus,
  type RefundDecision,
  type RefundRequest,
  type TransferMode,
  type TransferOutcome,
  SERVICE_REFUND_WINDOW_MS,
} from './messages';
import { showBusinessStatus } from './business-status';

export const TRANSFER_DEADLINE_MS = 5 * 24 * 60 * 60 * 1000;
const FIRST_POLL_MS = 15_000;
const MAX_POLL_MS = 60 * 60 * 1000;
export const FIRST_OPERATOR_REMINDER_MS = 60 * 60 * 1000;
export const OPERATOR_REMINDER_EVERY_MS = 24 * 60 * 60 * 1000;
/**
 * Reminders before the workflow stops sending them (two weeks: the first after an hour, then daily):
 * the order still waits, with no timer, so its history stops growing; the OrdersAwaitingOperator
 * alert (partner_api_orders_awaiting_operator) keeps saying it waits.
 */
export const OPERATOR_REMINDERS = 14;

const registrar = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  // A registrar call is retried no longer than the transfer may take; then the order fails (or,
  // stopping a transfer, an operator decides).
  scheduleToCloseTimeout: TRANSFER_DEADLINE_MS,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes', nonRetryableErrorTypes: ['TransferRejected'] },
});
const orders = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', nonRetryableErrorTypes: [REFUND_NOT_ALLOWED] },
});

/**
 * A registrar call that kept failing until its 5-day schedule-to-close timeout: the server then
 * gives up retrying (retry state TIMEOUT, the last attempt's error as the cause), or the last
 * attempt itself ran out of time.
 */
function registrarSilent(err: unknown): boolean {
  if (!(err instanceof ActivityFailure)) return false;
  return err.retryState === RetryState.TIMEOUT || (err.cause instanceof TimeoutFailure && err.cause.timeoutType === TimeoutType.SCHEDULE_TO_CLOSE);
}

function rejection(err: unknown): string | undefined {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'TransferRejected') return err.cause.message;
  return undefined;
}

export async function orderFulfilmentWorkflow(input: OrderFulfilmentInput): Promise<OrderFulfilmentResult> {
  const { orderId, orderPublicId } = input;
  let status: OrderStatus = 'PAYMENT_RECORDED';
  let mode: TransferMode | null = null;
  let locked = false;
  let awaitingOperator = false;
  let operatorOutcome: TransferOutcome | undefined;
  let ended = false;
  let result: OrderFulfilmentResult | undefined;
  let refund: (RefundRequest & { requestedAt: string; decision?: RefundDecision }) | undefined;
  const refundPending = () => refund !== undefined && refund.decision === undefined;
  // Sandbox fast-forward ends the wait on a pending transfer now: its 5-day deadline is reached.
  const fastForward = fastForwardable();

  setHandler(fulfilmentStateQuery, () => ({
    status,
    mode,
    awaitingOperator,
    refund: refund ? { refundPublicId: refund.refundPublicId, reason: refund.reason, requestedAt: refund.requestedAt, decision: refund.decision ?? null } : null,
  }));

  setHandler(
    refundUpdate,
    async (request) => {
      const ask = (refund ??= { ...request, requestedAt: new Date().toISOString() });
      await condition(() => ask.decision !== undefined);
      return ask.decision!;
    },
    {
      validator: (_request: RefundRequest) => {
        if (refund) return; // asked before: the handler answers that decision
        if (status === 'TRANSFER_COMPLETED') {
          throw ApplicationFailure.nonRetryable(`order ${orderPublicId} reached TRANSFER_COMPLETED; refunds are possible only before that`, REFUND_NOT_ALLOWED);
        }
        // A hosted-checkout sale's refund window, from this workflow's start (the payment) on its
        // clock: a live transfer can wait for an operator for longer.
        if (input.serviceCollected && Date.now() >= workflowInfo().startTime.getTime() + SERVICE_REFUND_WINDOW_MS) {
          throw ApplicationFailure.nonRetryable(`order ${orderPublicId} was paid more than 30 days ago; its refund window has closed`, REFUND_NOT_ALLOWED);
        }
        if (ended) throw ApplicationFailure.nonRetryable(`fulfilment of order ${orderPublicId} has ended (${status})`, ORDER_ENDED);
      },
    },
  );

  setHandler(
    transferOutcomeUpdate,
    async (outcome) => {
      operatorOutcome = outcome;
      await condition(() => ended);
      return result!;
    },
    {
      validator: (outcome) => {
        if (!awaitingOperator || operatorOutcome) {
          const why = mode === 'registrar' ? 'its transfer runs through a registrar' : `it is ${status}`;
          throw ApplicationFailure.nonRetryable(`order ${orderPublicId} is not waiting for an operator: ${why}`, NOT_AWAITING_OPERATOR);
        }
        if (outcome?.outcome !== 'completed' && outcome?.outcome !== 'failed') {
          throw ApplicationFailure.nonRetryable('outcome must be "completed" or "failed"', NOT_AWAITING_OPERATOR);
        }
      },
    },
  );

  const show = showBusinessStatus;

  /** Takes the status an activity left the order in, and shows it. */
  const settle = (result: { status: OrderStatus }): OrderStatus => {
    status = result.status;
    show(status);
    return status;
  };

  /** Moves the order to `to` with this workflow's clock. */
  const advance = async (to: OrderStatus, detail?: string): Promise<OrderStatus> =>
    settle(await orders.advanceOrder({ orderId, to, at: new Date().toISOString(), detail }));

  const grant = async (): Promise<OrderFulfilmentResult> => {
    const ask = refund!;
    try {
      const granted = await orders.grantRefund({ orderId, refundPublicId: ask.refundPublicId, reason: ask.reason, at: new Date().toISOString() });
      ask.decision = { granted: true, refundPublicId: granted.refund_id };
      status = 'REFUNDED';
      show(status);
    } catch (err) {
      if (!(err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === REFUND_NOT_ALLOWED)) throw err;
      ask.decision = { granted: false, reason: err.cause.message };
    }
    return { status };
  };

  const complete = async (): Promise<OrderFulfilmentResult> => ({ status: await advance('TRANSFER_COMPLETED') });

  /**
   * Asks the registry to stop the hand-over and waits until it says where it stands: true when
   * the registry completed the transfer first, false once it is stopped (or nothing was asked).
   */
  const registryCompletedFirst = async (): Promise<boolean> => {
    if (mode !== 'registrar' || !locked) return false;
    // Bounded since this patch: a registry that neither stops nor completes the transfer within
    // 5 days of the cancel (or a registrar that stops answering) is handed to an operator.
    const bounded = patched(PATCHES.boundedCancelPolling.patchId);
    const deadline = Date.now() + TRANSFER_DEADLINE_MS;
    const operatorDecides = async (why: string): Promise<boolean> => {
      if (!operatorOutcome) await waitForOperator(why);
      return operatorOutcome!.outcome === 'completed';
    };
    try {
      let state = await registrar.cancelTransfer({ orderId });
      for (let pollMs = FIRST_POLL_MS; state === 'pending'; pollMs = Math.min(pollMs * 2, MAX_POLL_MS)) {
        if (bounded && Date.now() >= deadline) return operatorDecides('The registry neither stopped nor completed this transfer within 5 days of the cancel: find out where it stands and record its outcome');
        await sleep(pollMs, { summary: 'until the next transfer check' });
        state = await registrar.checkTransfer({ orderId });
      }
      return state === 'completed';
    } catch (err) {
      if (!bounded || !registrarSilent(err)) throw err;
      return operatorDecides('The registrar did not answer the cancel for 5 days: find out where the transfer stands and record its outcome');
    }
  };

  /** The transfer cannot go on: only once the registry confirms it stopped is the name released. */
  const fail = async (reason: string): Promise<OrderFulfilmentResult> => {
    if (await registryCompletedFirst()) return complete();
    return { status: await advance('TRANSFER_FAILED', reason), reason };
  };

  /** A refund asked while the name may be moving: stop the registry first, then decide. */
  const stopForRefund = async (): Promise<OrderFulfilmentResult> => ((await registryCompletedFirst()) ? complete() : grant());

  /** No registrar adapter: operators carry the transfer out by hand and record its outcome. */
  const byOperator = async (): Promise<OrderFulfilmentResult> => {
    await advance('TRANSFER_PENDING', "carried out by the service's operators");
    await waitForOperator('Waiting for an operator to record this transfer\'s outcome');
    if (operatorOutcome!.outcome === 'completed') return complete();
    if (refundPending()) return grant();
    return fail(operatorOutcome!.reason ?? 'the operators recorded the transfer as failed');
  };

  /**
   * Waits, with reminders, for an operator's recordTransferOutcome: the transfer is carried out by
   * hand, or the registrar stopped answering and only a person can find out where it stands.
   */
  const waitForOperator = async (why: string): Promise<void> => {
    awaitingOperator = true;
    show('AWAITING_OPERATOR');
    let reminders = 0;
    let refundAnnounced = false;
    // Runs that began waiting before this patch remind every day until an operator acts.
    const remindersEnd = patched(PATCHES.boundedOperatorReminders.patchId);
    for (;;) {
      setCurrentDetails(
        `${why} (Update recordTransferOutcome, or npm run admin -- order transfer-completed|transfer-failed ${orderPublicId}).` +
          (refundPending() ? ' A refund was requested: if the transfer was stopped, record transfer-failed and the refund is granted.' : ''),
      );
      const wakes = () => operatorOutcome !== undefined || (refundPending() && !refundAnnounced);
      const woken =
        remindersEnd && reminders >= OPERATOR_REMINDERS
          ? (await condition(wakes), true)
          : await condition(wakes, reminders === 0 ? FIRST_OPERATOR_REMINDER_MS : OPERATOR_REMINDER_EVERY_MS, { summary: 'waiting for an operator: the next reminder' });
      if (operatorOutcome) break;
      if (woken) refundAnnounced = true;
      else reminders++;
      await orders.remindOperators({ orderId, orderPublicId, reminder: reminders, refundRequested: refundPending() });
    }
    awaitingOperator = false;
    setCurrentDetails('');
  };

  /** Every path ends here: a refund still waiting is decided by how the transfer ended. */
  const finish = async (outcome: OrderFulfilmentResult): Promise<OrderFulfilmentResult> => {
    if (refundPending()) {
      if (outcome.status === 'TRANSFER_COMPLETED') refund!.decision = { granted: false, reason: `the registry completed the transfer of order ${orderPublicId} first` };
      else outcome = await grant();
    }
    result = outcome;
    ended = true;
    fastForward.settled();
    await condition(allHandlersFinished);
    return outcome;
  };

  const run = async (): Promise<OrderFulfilmentResult> => {
    // Runs started before this change record each step as its own activity; since, a registrar
    // call and the statuses it leads to are one activity (half the activities and workflow tasks).
    const joinedSteps = patched(PATCHES.fulfilmentJoinedSteps.patchId);
    mode = await orders.transferMode({ orderId });
    if (refundPending()) return grant();
    if (mode === 'operator') return byOperator();

    if (joinedSteps) {
      settle(await registrar.lockDomainAndRecord({ orderId, at: new Date().toISOString() }));
      locked = true;
    } else {
      await registrar.lockDomain({ orderId });
      locked = true;
      await advance('DOMAIN_LOCKED');
    }
    if (refundPending()) return stopForRefund();

    if (joinedSteps) {
      settle(await registrar.requestTransferAndRecord({ orderId, at: new Date().toISOString() }));
    } else {
      const transferRef = await registrar.requestTransfer({ orderId });
      await advance('TRANSFER_INITIATED', `transfer ${transferRef}`);
      await advance('TRANSFER_PENDING');
    }

    const deadline = Date.now() + TRANSFER_DEADLINE_MS;
    let pollMs = FIRST_POLL_MS;
    for (let polls = 0; ; polls++) {
      if (await fastForward.wait('transfer_deadline', refundPending, pollMs, 'until the next transfer check')) return stopForRefund();
      // Sandbox fast-forward: the 5 days are over now.
      if (fastForward.fired) return fail('the registry did not confirm the transfer within 5 days (sandbox fast-forward)');
      const state = await registrar.checkTransfer({ orderId });
      if (state === 'completed') return complete();
      if (state === 'rejected' || state === 'cancelled') return fail(`the registry reported the transfer ${state}`);
      if (Date.now() >= deadline) return fail('the registry did not confirm the transfer within 5 days');
      if (polls >= 8) pollMs = Math.min(pollMs * 2, MAX_POLL_MS);
    }
  };

  try {
    return await finish(await run());
  } catch (err) {
    const reason = rejection(err) ?? (registrarSilent(err) ? 'the registrar did not answer for 5 days' : undefined);
    if (reason) return finish(await fail(reason));
    throw err;
  } finally {
    fastForward.settled();
  }
}

// Worker Versioning: runs long: it moves to the current worker version, patched() keeps it replaying (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('AUTO_UPGRADE'), orderFulfilmentWorkflow);
