/** The quote reservation's and the order fulfilment's I/O: registrar calls, order statuses, refunds, operator reminders. */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { REFUND_NOT_ALLOWED, type OrderStatus, type TransferMode } from '../workflows/messages';
import { Order } from '../src/db/entities/order';
import { advanceOrder, type TransitionResult } from '../src/orders/fulfilment';
import { grantRefund, RefundNotAllowed, type RefundView } from '../src/orders/refunds';
import { expireQuote } from '../src/orders/quotes';
import { markWorkflowStarted } from '../src/orders/orders';
import { SandboxRegistrar, TransferRejected, type RegistrarPort, type TransferOrder, type TransferState } from '../src/orders/registrar';
import type { Environment } from '../src/config';
import { refundBuyerCardOrLeave } from '../src/checkout/card-refunds';
import type { ActivityDeps } from './deps';
import { registrarCallDuration } from '../src/metrics/metrics';

export function createOrderActivities(deps: ActivityDeps) {
  const registrars: Partial<Record<Environment, RegistrarPort>> = { sandbox: deps.registrars?.sandbox ?? new SandboxRegistrar(deps.dataSource), live: deps.registrars?.live };

  async function transferOrder(orderId: string): Promise<{ order: TransferOrder; registrar: RegistrarPort; status: OrderStatus }> {
    const row = await deps.dataSource.getRepository(Order).findOne({ select: { id: true, domain: true, externalPaymentRef: true, environment: true, status: true }, where: { id: orderId } });
    if (!row) throw ApplicationFailure.nonRetryable(`order ${orderId} does not exist`, 'TransferRejected');
    const registrar = registrars[row.environment];
    if (!registrar) throw ApplicationFailure.nonRetryable(`no registrar adapter is configured for ${row.environment}`, 'TransferRejected');
    return { order: { orderId: row.id, domain: row.domain, externalPaymentRef: row.externalPaymentRef }, registrar, status: row.status };
  }

  /** Runs a registrar call; a TransferRejected becomes a non-retryable failure of that type. */
  async function registrarCall<T>(orderId: string, call: (r: RegistrarPort, o: TransferOrder, attempt: number) => Promise<T>): Promise<T> {
    const { order, registrar } = await transferOrder(orderId);
    return callRegistrar(registrar, order, call);
  }

  async function callRegistrar<T>(registrar: RegistrarPort, order: TransferOrder, call: (r: RegistrarPort, o: TransferOrder, attempt: number) => Promise<T>): Promise<T> {
    const end = registrarCallDuration.startTimer({ activity: Context.current().info.activityType });
    try {
      const answer = await call(registrar, order, Context.current().info.attempt);
      end({ outcome: 'ok' });
      return answer;
    } catch (err) {
      end({ outcome: err instanceof TransferRejected ? 'rejected' : 'error' });
      if (err instanceof TransferRejected) throw ApplicationFailure.nonRetryable(err.message, 'TransferRejected');
      throw err;
    }
  }

  /**
   * A registrar call followed by the statuses it leads to, as one activity. A retry that finds the
   * order already at one of those statuses (the call had succeeded, then a write failed or the
   * attempt timed out) does not call the registrar again; the writes retry on the registrar's
   * back-off. The statuses are stamped with the time the call returned, on the workflow's clock:
   * the later of the workflow's time when it scheduled the step and the server's time for this
   * attempt, plus how long the call took.
   */
  async function callThenAdvance<T>(
    input: { orderId: string; at: string },
    call: (r: RegistrarPort, o: TransferOrder, attempt: number) => Promise<T>,
    steps: (result: T | undefined) => Array<{ to: OrderStatus; detail?: string }>,
  ): Promise<TransitionResult> {
    const { order, registrar, status } = await transferOrder(input.orderId);
    const started = Date.now();
    const past = steps(undefined).some((step) => step.to === status);
    const result = past ? undefined : await callRegistrar(registrar, order, call);
    const from = Math.max(Date.parse(input.at), Context.current().info.currentAttemptScheduledTimestampMs);
    const at = new Date(from + (Date.now() - started)).toISOString();
    return advanceAndNotify(steps(result).map((step) => ({ orderId: input.orderId, at, ...step })));
  }

  /**
   * Moves the order through `steps` in turn (each in its own transaction). A step that does not
   * apply stops the walk, unless the order already stands at a later step of the list (a retry of
   * the activity after some steps committed). Webhook delivery is then woken once if the order
   * stands at one of the steps, so a retry wakes it again; a needless wake-up finds nothing new.
   */
  /** A buyer's card refund that failed after its commit: logged; the recovery sweep gives it back. */
  const leftForSweep = (orderId: string) => (err: Error) => log.warn("a buyer's card refund failed; the recovery sweep tries it again", { order_id: orderId, error: err.message });

  async function advanceAndNotify(steps: Array<{ orderId: string; to: OrderStatus; at: string; detail?: string }>): Promise<TransitionResult> {
    let result: TransitionResult = { status: 'PAYMENT_RECORDED', applied: false };
    for (const [i, step] of steps.entries()) {
      result = await advanceOrder(deps.dataSource, step);
      if (!result.applied && !steps.slice(i + 1).some((later) => later.to === result.status)) break;
    }
    const { event } = result;
    // A failed transfer of a hosted-checkout sale gives the buyer's money back (once, after the commit).
    if (result.status === 'TRANSFER_FAILED' && steps.some((step) => step.to === 'TRANSFER_FAILED')) await refundBuyerCardOrLeave(deps, steps[0].orderId, leftForSweep(steps[0].orderId));
    if (event && steps.some((step) => step.to === result.status)) await deps.starters?.eventsAppended(event.partnerId, event.environment);
    return { status: result.status, applied: result.applied };
  }

  return {
    async expireQuote(input: { quotePublicId: string }): Promise<'expired' | 'consumed' | 'absent'> {
      return expireQuote(deps.dataSource, input.quotePublicId);
    },

    async advanceOrder(input: { orderId: string; to: OrderStatus; at: string; detail?: string }): Promise<TransitionResult> {
      return advanceAndNotify([input]);
    },

    async lockDomain(input: { orderId: string }): Promise<void> {
      await registrarCall(input.orderId, (r, o, a) => r.lockDomain(o, a));
    },

    async requestTransfer(input: { orderId: string }): Promise<string> {
      return registrarCall(input.orderId, (r, o, a) => r.requestTransfer(o, a));
    },

    /** Locks the name at the registrar, then records DOMAIN_LOCKED (callThenAdvance). */
    async lockDomainAndRecord(input: { orderId: string; at: string }): Promise<TransitionResult> {
      return callThenAdvance(input, (r, o, a) => r.lockDomain(o, a), () => [{ to: 'DOMAIN_LOCKED' }]);
    },

    /**
     * Requests the transfer, then records TRANSFER_INITIATED (with the transfer's reference) and
     * TRANSFER_PENDING (callThenAdvance: a retry past the request leaves the recorded reference).
     */
    async requestTransferAndRecord(input: { orderId: string; at: string }): Promise<TransitionResult> {
      return callThenAdvance(
        input,
        (r, o, a) => r.requestTransfer(o, a),
        (transferRef) => [{ to: 'TRANSFER_INITIATED', detail: transferRef === undefined ? undefined : `transfer ${transferRef}` }, { to: 'TRANSFER_PENDING' }],
      );
    },

    async checkTransfer(input: { orderId: string }) {
      return registrarCall(input.orderId, (r, o, a) => r.checkTransfer(o, a));
    },

    async cancelTransfer(input: { orderId: string }): Promise<TransferState> {
      return registrarCall(input.orderId, (r, o, a) => r.cancelTransfer(o, a));
    },

    /** Whether a registrar adapter carries the order's transfer out, or operators by hand. */
    async transferMode(input: { orderId: string }): Promise<TransferMode> {
      const order = await deps.dataSource.getRepository(Order).findOneOrFail({ select: { id: true, environment: true, workflowStarted: true }, where: { id: input.orderId } });
      // The fulfilment's first step records that it runs (the API does not wait to write it; until
      // then the recovery sweep's start of this order finds the workflow running and changes nothing).
      if (!order.workflowStarted) await markWorkflowStarted(deps.dataSource, order.id);
      return registrars[order.environment] ? 'registrar' : 'operator';
    },

    /** Records the refund the workflow granted; a refusal by the database's rules is final. */
    async grantRefund(input: { orderId: string; refundPublicId: string; reason: string | null; at: string }): Promise<RefundView> {
      try {
        const { refund, created, event } = await grantRefund(deps.dataSource, input);
        // The buyer of a hosted-checkout sale gets the card payment back (once, after the commit).
        await refundBuyerCardOrLeave(deps, input.orderId, leftForSweep(input.orderId));
        if (created) await deps.starters?.eventsAppended(event.partnerId, event.environment);
        return refund;
      } catch (err) {
        if (err instanceof RefundNotAllowed) throw ApplicationFailure.nonRetryable(err.message, REFUND_NOT_ALLOWED);
        throw err;
      }
    },

    /**
     * A live transfer is waiting for an operator: a WARN line in the worker's log (alerting
     * watches for `operator_action_needed`), next to the workflow's current details in the UI.
     */
    async remindOperators(input: { orderId: string; orderPublicId: string; reminder: number; refundRequested: boolean }): Promise<void> {
      log.warn('operator_action_needed: a live transfer waits for its outcome', {
        order_id: input.orderPublicId,
        reminder: input.reminder,
        refund_requested: input.refundRequested,
        command: `npm run --silent admin -- order transfer-completed|transfer-failed ${input.orderPublicId} --json`,
      });
    },
  };
}
