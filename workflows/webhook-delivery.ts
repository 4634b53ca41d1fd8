/**
 * Webhook delivery for one partner and environment (id `webhooks:<partner_id>:<environment>`).
 * Pushes the partner's events in history order, one at a time: the next event is sent only once
 * the previous one was delivered or marked failed, so a receiver sees them in order.
 *
 * Each event is one activity retried with exponential back-off (10 s doubling to 1 hour) for
 * 3 days from when its turn comes (the endpoint is then disabled, and the rest of the batch,
 * finding no enabled endpoint, is marked failed at once rather than retried 3 days each); the Temporal UI shows its attempt count and last error as a
 * pending activity. After 3 days the delivery is marked failed and the next event goes. When
 * caught up the workflow waits up to 10 minutes for the eventsAppended signal, then ends; the
 * next event starts it again (signal-with-start). A wake-up signals only a delivery waiting for
 * events (the endpoint's `delivery_idle`, kept by nextEventsToDeliver); a busy one is left alone,
 * so a partner's outage adds nothing to its history while an event is retried for days.
 * Continues as new every 200 events and wake-ups, or sooner when the server suggests it.
 *
 * An operator's cancel stops delivery and nothing else: the run ends cancelled, the event being
 * delivered keeps its pending record and the endpoint stays enabled. The next event (or the
 * recovery sweep, within a minute, for an endpoint behind its events) starts delivery again
 * with that same event.
 */
import { ActivityFailure, ApplicationFailure, condition, continueAsNew, isCancellation, patched, proxyActivities, setCurrentDetails, setHandler, setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import { PATCHES } from './patches';
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

/** Events handled plus wake-ups received in one run before it continues as new. */
export const STEPS_PER_RUN = 200;

/** Every attempt failing this long (the event's retries since its turn came) emails the partner's contact. */
export const FAILING_EMAIL_AFTER_MS = 24 * 60 * 60 * 1000;

/** Waits for the delivery up to 24 hours; still failing then, the partner's contact is told (once for the event). */
async function tellIfFailingForADay(delivering: Promise<void>, input: WebhookDeliveryInput, eventId: string): Promise<void> {
  let settled = false;
  delivering.then(
    () => (settled = true),
    () => (settled = true),
  );
  if (await condition(() => settled, FAILING_EMAIL_AFTER_MS, { summary: 'delivery failing: the partner is emailed after 24 hours' })) return;
  await bookkeeping.noteEndpointFailing({ ...input, eventId, since: new Date(Date.now() - FAILING_EMAIL_AFTER_MS).toISOString() });
}

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<void> {
  // A run continued as new has no start summary (the SDK's continueAsNew takes none): each run says what it is here.
  setCurrentDetails(`Webhook delivery for partner ${input.partnerId} (${input.environment}): events in order, the one being delivered is the pending activity deliverEvent (retried for 3 days).`);
  let woken = false;
  let wakeUps = 0;
  setHandler(eventsAppendedSignal, () => {
    woken = true;
    wakeUps++;
  });
  // Runs started before this patch counted events only, and ignored the server's suggestion.
  const boundedByHistory = patched(PATCHES.deliveryWakeUpsCount.patchId);
  // Runs started before this patch sent no email while an endpoint failed.
  const emailsWhenFailing = patched(PATCHES.deliveryFailingEmail.patchId);
  const more = (handled: number) => (boundedByHistory ? handled + wakeUps < STEPS_PER_RUN && !workflowInfo().continueAsNewSuggested : handled < STEPS_PER_RUN);
  for (let handled = 0; more(handled); ) {
    woken = false;
    const batch = await bookkeeping.nextEventsToDeliver({ ...input, limit: 20 });
    if (batch.length === 0) {
      if (await condition(() => woken, '10 minutes', { summary: 'caught up: waiting for new events' })) continue;
      return;
    }
    for (const event of batch) {
      try {
        const delivering = pushing.deliverEvent.executeWithOptions({ summary: `event ${event.id} (#${event.seq})` }, [{ ...input, eventId: event.id }]);
        if (emailsWhenFailing) await tellIfFailingForADay(delivering, input, event.id);
        await delivering;
      } catch (err) {
        // Not the receiver's failure: giving up here would fail the event and disable its endpoint.
        if (isCancellation(err)) throw err;
        const reason = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : String(err);
        const disabled = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'EndpointDisabled';
        await bookkeeping.markDeliveryFailed({ ...input, eventId: event.id, error: disabled ? reason : `gave up after 3 days: ${reason}` });
      }
      handled++;
    }
  }
  await continueAsNew<typeof webhookDeliveryWorkflow>(input);
}

// Worker Versioning: auto-upgrade, not pinned: a busy partner's delivery continues as new without
// end, and a pinned run would stay chained to one build, stranded once that build's workers stop
// (src/temporal/versioning.ts). patched() keeps its histories replaying.
setWorkflowOptions(onVersionedWorker('AUTO_UPGRADE'), webhookDeliveryWorkflow);
