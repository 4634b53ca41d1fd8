/**
 * The delivery record of each event (attempts, last error, outcome) and each partner's delivery
 * position. Called by the delivery workflow's activities; every call is safe to repeat.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { SecretBox } from '../auth/secret-box';
import { deliveryTarget } from './endpoints';
import { PartnerEvent } from '../db/entities/partner-event';
import { WebhookDelivery } from '../db/entities/webhook-delivery';
import { WebhookEndpoint } from '../db/entities/webhook-endpoint';
import { eventsAfter, eventView, storedEvent, type StoredEvent } from './events';
import { postEvent, type AttemptResult } from './delivery';
import { Partner } from '../db/entities/partner';
import { queueEmail } from '../mail/outbox';

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
  if (!target) return { ok: false, error: 'the endpoint is disabled (registering it again re-enables it)', disabled: true };
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
export async function markDeliveryFailed(ctx: DeliveryContext, partnerId: string, environment: Environment, eventId: string, error: string): Promise<string | undefined> {
  const event = await ctx.dataSource.getRepository(PartnerEvent).findOneByOrFail({ id: eventId });
  await finish(ctx, { id: eventId, partnerId, environment, seq: Number(event.partnerSeq) }, 'failed', error);
  return ctx.dataSource.transaction(async (tx) => {
    const disabled = await tx.getRepository(WebhookEndpoint).update({ partnerId, environment, enabled: true }, { enabled: false, updatedAt: () => 'now()' });
    // The events of a batch after the one that disabled it fail at once: one email, for the disabling.
    if (!disabled.affected) return undefined;
    return queueEndpointEmail(tx, 'webhook_endpoint_disabled', { partnerId, environment, eventId, lastError: error });
  });
}

/** Every delivery has failed this long (the event's attempts since its turn came): its partner is told, once per event. */
export const ENDPOINT_FAILING_EMAIL_AFTER_MS = 24 * 60 * 60 * 1000;

/** Every attempt of an event has failed for 24 hours (the delivery workflow's timer): the partner's contact is told, once for that event; answers the email's key, or undefined when there is nobody to tell. */
export async function noteEndpointFailing(ctx: DeliveryContext, partnerId: string, environment: Environment, eventId: string, since: Date): Promise<string | undefined> {
  const delivery = await ctx.dataSource.getRepository(WebhookDelivery).findOneBy({ eventId });
  if (delivery?.status !== 'pending') return undefined;
  return ctx.dataSource.transaction((tx) => queueEndpointEmail(tx, 'webhook_endpoint_failing', { partnerId, environment, eventId, lastError: delivery.lastError ?? 'no answer', since }));
}

/** The endpoint as an email names it: its origin only (a path or query may hold a partner's token). */
function endpointShown(url: string): string {
  try {
    const u = new URL(url);
    return u.pathname === '/' && !u.search ? u.origin : `${u.origin}/…`;
  } catch {
    return 'your endpoint';
  }
}

async function queueEndpointEmail(
  tx: EntityManager,
  kind: 'webhook_endpoint_failing' | 'webhook_endpoint_disabled',
  about: { partnerId: string; environment: Environment; eventId: string; lastError: string; since?: Date },
): Promise<string | undefined> {
  const partner = await tx.getRepository(Partner).findOneBy({ id: about.partnerId });
  const endpoint = await tx.getRepository(WebhookEndpoint).findOneBy({ partnerId: about.partnerId, environment: about.environment });
  if (!partner?.contactEmail || !endpoint) return undefined;
  const key = `${kind === 'webhook_endpoint_failing' ? 'webhook-failing' : 'webhook-disabled'}:${about.partnerId}:${about.environment}:${about.eventId}`;
  const lastError = about.lastError.slice(0, 300);
  const url = endpointShown(endpoint.url);
  if (kind === 'webhook_endpoint_failing') {
    await queueEmail(tx, { key, kind, to: partner.contactEmail, data: { environment: about.environment, url, since: about.since!.toISOString(), lastError } });
  } else {
    await queueEmail(tx, { key, kind, to: partner.contactEmail, data: { environment: about.environment, url, lastError } });
  }
  return key;
}
