/** The webhook delivery's I/O: the next events to push, one attempt, giving up. */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { SecretBox } from '../src/auth/secret-box';
import type { Environment } from '../src/config';
import { attemptDelivery, markDeliveryFailed, nextEventsToDeliver, noteEndpointFailing } from '../src/webhooks/deliveries';
import type { ActivityDeps } from './deps';
import { webhookDeliveries } from '../src/metrics/metrics';

/** How often a delivery attempt heartbeats while its request is out. */
export const HEARTBEAT_EVERY_MS = 2_000;

export function createWebhookActivities(deps: ActivityDeps) {
  const delivery = { dataSource: deps.dataSource, secretBox: new SecretBox(deps.masterKey), allowLoopback: deps.allowLoopbackWebhooks ?? false };
  return {
    async nextEventsToDeliver(input: { partnerId: string; environment: Environment; limit: number }): Promise<Array<{ id: string; seq: number }>> {
      return (await nextEventsToDeliver(delivery, input.partnerId, input.environment, input.limit)).map((e) => ({ id: e.id, seq: e.seq }));
    },

    /** One delivery attempt; throws (so Temporal retries with back-off) unless the endpoint answered 2xx. */
    async deliverEvent(input: { partnerId: string; environment: Environment; eventId: string }): Promise<void> {
      // Cancelled (the delivery cancelled, or the worker stopping past its grace period): the
      // request is cut and the activity ends cancelled, so the event is neither failed nor lost.
      const context = Context.current();
      const signal = context.cancellationSignal;
      // Heartbeats while the request is out (up to 10 s): the server's cancellation (the delivery
      // cancelled, its run reset or terminated) reaches an activity only in a heartbeat's answer.
      context.heartbeat();
      const beating = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
      let result: Awaited<ReturnType<typeof attemptDelivery>>;
      try {
        result = await attemptDelivery(delivery, input.partnerId, input.environment, input.eventId, signal);
      } finally {
        clearInterval(beating);
      }
      if (signal.aborted) throw new CancelledFailure(`delivery of ${input.eventId} cancelled`);
      webhookDeliveries.inc({ environment: input.environment, outcome: result.ok ? 'delivered' : 'failed_attempt' });
      // Disabled (an earlier event of the batch was given up): the rest fail at once, not 3 days each.
      if (result.disabled) throw ApplicationFailure.nonRetryable(`delivery of ${input.eventId}: ${result.error}`, 'EndpointDisabled');
      if (!result.ok) throw ApplicationFailure.retryable(`delivery of ${input.eventId} failed: ${result.error}`, 'DeliveryFailed');
    },

    /** The event's attempts have all failed for 24 hours: the partner's contact is emailed (once for the event). */
    async noteEndpointFailing(input: { partnerId: string; environment: Environment; eventId: string; since: string }): Promise<void> {
      const emailKey = await noteEndpointFailing(delivery, input.partnerId, input.environment, input.eventId, new Date(input.since));
      if (emailKey) await deps.starters?.emailsOf([emailKey]);
    },

    async markDeliveryFailed(input: { partnerId: string; environment: Environment; eventId: string; error: string }): Promise<void> {
      const emailKey = await markDeliveryFailed(delivery, input.partnerId, input.environment, input.eventId, input.error);
      if (emailKey) await deps.starters?.emailsOf([emailKey]);
      webhookDeliveries.inc({ environment: input.environment, outcome: 'gave_up' });
    },
  };
}
