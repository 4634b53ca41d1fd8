/**
 * Webhook delivery for one partner and environment (id `webhooks:<partner_id>:<environment>`).
 * Pushes the partner's events in history order, one at a time: the next event is sent only once
 * the previous one was delivered or marked failed, so a receiver sees them in order.
 *
 * Each event is one activity retried with exponential back-off (10 s doubling to 1 hour) for
 * 3 days from when its turn comes; the Temporal UI shows its attempt count and last error as a
 * pending activity. After 3 days the delivery is marked failed and the next event goes. When
 * caught up the workflow waits up to 10 minutes for the eventsAppended signal, then ends; the
 * next event starts it again (signal-with-start). Continues as new every 200 events.
 *
 * An operator's cancel stops delivery and nothing else: the run ends cancelled, the event being
 * delivered keeps its pending record and the endpoint stays enabled. The next event (or the
 * recovery sweep, within a minute, for an endpoint behind its events) starts delivery again
 * with that same event.
 */
import { ActivityFailure, condition, continueAsNew, isCancellation, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { eventsAppendedSignal, type WebhookDeliveryInput } from './messages';

export const DELIVERY_WINDOW_MS = 3 * 24 * 60 * 60 * 1000;

const bookkeeping = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

const pushing = proxyActivities<Activities>({
  // One attempt is at most 10 s of HTTP plus bookkeeping.
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: DELIVERY_WINDOW_MS,
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '1 hour' },
});

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<void> {
  let woken = false;
  setHandler(eventsAppendedSignal, () => {
    woken = true;
  });
  for (let handled = 0; handled < 200; ) {
    woken = false;
    const batch = await bookkeeping.nextEventsToDeliver({ ...input, limit: 20 });
    if (batch.length === 0) {
      if (await condition(() => woken, '10 minutes')) continue;
      return;
    }
    for (const event of batch) {
      try {
        await pushing.deliverEvent({ ...input, eventId: event.id });
      } catch (err) {
        // Not the receiver's failure: giving up here would fail the event and disable its endpoint.
        if (isCancellation(err)) throw err;
        const reason = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : String(err);
        await bookkeeping.markDeliveryFailed({ ...input, eventId: event.id, error: `gave up after 3 days: ${reason}` });
      }
      handled++;
    }
  }
  await continueAsNew<typeof webhookDeliveryWorkflow>(input);
}
