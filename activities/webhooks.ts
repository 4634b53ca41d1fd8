/** The webhook delivery's I/O: the next events to push, one attempt, giving up. */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { SecretBox } from '../src/auth/secret-box';
import type { Environment } from '../src/config';
import { attemptDelivery, markDeliveryFailed, nextEventsToDeliver } from '../src/webhooks/deliveries';
import type { ActivityDeps } from './deps';
import { webhookDeliveries } from '../src/metrics/metrics';

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
      const signal = Context.current().cancellationSignal;
      const result = await attemptDelivery(delivery, input.partnerId, input.environment, input.eventId, signal);
      if (signal.aborted) throw new CancelledFailure(`delivery of ${input.eventId} cancelled`);
      webhookDeliveries.inc({ environment: input.environment, outcome: result.ok ? 'delivered' : 'failed_attempt' });
      if (!result.ok) throw ApplicationFailure.retryable(`delivery of ${input.eventId} failed: ${result.error}`, 'DeliveryFailed');
    },

    async markDeliveryFailed(input: { partnerId: string; environment: Environment; eventId: string; error: string }): Promise<void> {
      await markDeliveryFailed(delivery, input.partnerId, input.environment, input.eventId, input.error);
      webhookDeliveries.inc({ environment: input.environment, outcome: 'gave_up' });
    },
  };
}
