/**
 * The delivery record of each event (attempts, last error, outcome) and each partner's delivery
 * position. Called by the delivery workflow's activities; every call is safe to repeat.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { SecretBox } from '../auth/secret-box';
import { deliveryTarget } from './endpoints';
import { PartnerEvent } from '../db/entities/partner-event';
import { WebhookDelivery } from '../db/entities/webhook-delivery';
import { WebhookEndpoint } from '../db/entities/webhook-endpoint';
import { eventsAfter, eventView, storedEvent, type StoredEvent } from './events';
import { postEvent, type AttemptResult } from './delivery';

export interface DeliveryContext {
  dataSource: DataSource;
  secretBox: SecretBox;
  /** WEBHOOK_ALLOW_LOOPBACK, checked again at each attempt: a name may resolve differently by now. */
  allowLoopback: boolean;
}

/**
 * The next events to push, oldest first; none when the partner has no enabled endpoint. Keeps the
 * endpoint's `delivery_idle` flag: before answering "none" it commits the flag, then looks again
 * in a new snapshot, so an event committed by a notifier that read "busy" (and did not signal) is
 * found by this second look.
 */
export async function nextEventsToDeliver(ctx: DeliveryContext, partnerId: string, environment: Environment, limit: number): Promise<StoredEvent[]> {
  const target = await deliveryTarget(ctx.dataSource, ctx.secretBox, partnerId, environment);
  if (!target) {
    // Disabled (or gone): when it is registered again, its wake-up must signal this waiting run.
    await markIdle(ctx.dataSource, partnerId, environment, true);
    return [];
  }
  const batch = await eventsAfter(ctx.dataSource, partnerId, environment, target.deliveredThroughSeq, limit);
  await markIdle(ctx.dataSource, partnerId, environment, batch.length === 0);
  if (batch.length) return batch;
  const again = await eventsAfter(ctx.dataSource, partnerId, environment, target.deliveredThroughSeq, limit);
  if (again.length) await markIdle(ctx.dataSource, partnerId, environment, false);
  return again;
}

async function markIdle(dataSource: DataSource, partnerId: string, environment: Environment, idle: boolean): Promise<void> {
  await dataSource
    .getRepository(WebhookEndpoint)
    .createQueryBuilder()
    .update()
    .set({ deliveryIdle: idle })
    .where('partner_id = :partnerId AND environment = :environment AND delivery_idle <> :idle', { partnerId, environment, idle })
    .execute();
}

async function finish(ctx: DeliveryContext, event: { id: string; partnerId: string; environment: Environment; seq: number }, status: 'delivered' | 'failed', error?: string) {
  await ctx.dataSource.transaction(async (tx) => {
    await tx
      .getRepository(WebhookDelivery)
      .createQueryBuilder()
      .insert()
      .values({ eventId: event.id, partnerId: event.partnerId, environment: event.environment, status, lastError: error ?? null, finishedAt: () => 'now()' })
      .orUpdate(['status', 'last_error', 'finished_at'], ['event_id'])
      .execute();
    await tx
      .getRepository(WebhookEndpoint)
      .createQueryBuilder()
      .update()
      .set({ deliveredThroughSeq: () => 'GREATEST(delivered_through_seq, :seq)' })
      .setParameter('seq', event.seq)
      .where('partner_id = :partnerId AND environment = :environment', { partnerId: event.partnerId, environment: event.environment })
      .execute();
  });
}

/** One attempt; records it, and on success marks the event delivered and moves the position past it. */
export async function attemptDelivery(ctx: DeliveryContext, partnerId: string, environment: Environment, eventId: string, signal?: AbortSignal): Promise<AttemptResult> {
  const target = await deliveryTarget(ctx.dataSource, ctx.secretBox, partnerId, environment);
  if (!target) return { ok: false, error: 'no enabled webhook endpoint' };
  const event = storedEvent(await ctx.dataSource.getRepository(PartnerEvent).findOneByOrFail({ id: eventId, partnerId }));
  const result = await postEvent(target.url, target.secrets, eventView(event), { environment, allowLoopback: ctx.allowLoopback }, signal);
  const deliveries = ctx.dataSource.getRepository(WebhookDelivery);
  await deliveries.createQueryBuilder().insert().values({ eventId: event.id, partnerId, environment, status: 'pending', attempts: 0 }).orIgnore().execute();
  await deliveries.update(
    { eventId: event.id },
    { attempts: () => 'attempts + 1', lastError: result.ok ? null : (result.error ?? 'failed'), lastAttemptAt: () => 'now()', url: target.url },
  );
  if (result.ok) await finish(ctx, { id: event.id, partnerId, environment, seq: event.seq }, 'delivered');
  return result;
}
/**
 * Retries are over: the event stays in /events, its delivery is failed, the position moves past
 * it, and the endpoint is disabled (a circuit breaker, so a dead endpoint does not hold every
 * later event for 3 days each). Registering the endpoint again (PUT) re-enables it and delivery
 * resumes with the next event.
 */
export async function markDeliveryFailed(ctx: DeliveryContext, partnerId: string, environment: Environment, eventId: string, error: string): Promise<void> {
  const event = await ctx.dataSource.getRepository(PartnerEvent).findOneByOrFail({ id: eventId });
  await finish(ctx, { id: eventId, partnerId, environment, seq: Number(event.partnerSeq) }, 'failed', error);
  await ctx.dataSource.getRepository(WebhookEndpoint).update({ partnerId, environment }, { enabled: false, updatedAt: () => 'now()' });
}
