/**
 * The delivery record of each event (attempts, last error, outcome) and each partner's delivery
 * position. Called by the delivery workflow's activities; every call is safe to repeat.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { SecretBox } from '../auth/secret-box';
import { deliveryTarget } from './endpoints';
import { eventsAfter, eventView, type StoredEvent } from './events';
import { postEvent, type AttemptResult } from './delivery';

export interface DeliveryContext {
  dataSource: DataSource;
  secretBox: SecretBox;
  /** WEBHOOK_ALLOW_LOOPBACK, checked again at each attempt: a name may resolve differently by now. */
  allowLoopback: boolean;
}

/** The next events to push, oldest first; none when the partner has no enabled endpoint. */
export async function nextEventsToDeliver(ctx: DeliveryContext, partnerId: string, environment: Environment, limit: number): Promise<StoredEvent[]> {
  const target = await deliveryTarget(ctx.dataSource, ctx.secretBox, partnerId, environment);
  if (!target) return [];
  return eventsAfter(ctx.dataSource, partnerId, environment, target.deliveredThroughSeq, limit);
}

async function finish(ctx: DeliveryContext, event: { id: string; partnerId: string; environment: Environment; seq: number }, status: 'delivered' | 'failed', error?: string) {
  await ctx.dataSource.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO webhook_deliveries (event_id, partner_id, environment, status, last_error, finished_at) VALUES ($1, $2, $3, $4, $5, now())
       ON CONFLICT (event_id) DO UPDATE SET status = EXCLUDED.status, last_error = COALESCE(EXCLUDED.last_error, webhook_deliveries.last_error), finished_at = now()`,
      [event.id, event.partnerId, event.environment, status, error ?? null],
    );
    await tx.query('UPDATE webhook_endpoints SET delivered_through_seq = GREATEST(delivered_through_seq, $3) WHERE partner_id = $1 AND environment = $2', [
      event.partnerId,
      event.environment,
      event.seq,
    ]);
  });
}

/** One attempt; records it, and on success marks the event delivered and moves the position past it. */
export async function attemptDelivery(ctx: DeliveryContext, partnerId: string, environment: Environment, eventId: string): Promise<AttemptResult> {
  const target = await deliveryTarget(ctx.dataSource, ctx.secretBox, partnerId, environment);
  if (!target) return { ok: false, error: 'no enabled webhook endpoint' };
  const [row] = (await ctx.dataSource.query('SELECT id, type, created_at, data, partner_seq FROM events WHERE id = $1 AND partner_id = $2', [eventId, partnerId])) as Array<{
    id: string;
    type: string;
    created_at: Date;
    data: unknown;
    partner_seq: string;
  }>;
  const event: StoredEvent = { id: row.id, type: row.type, created_at: row.created_at.toISOString(), data: row.data, seq: Number(row.partner_seq) };
  const result = await postEvent(target.url, target.secret, eventView(event), { environment, allowLoopback: ctx.allowLoopback });
  await ctx.dataSource.query(
    `INSERT INTO webhook_deliveries (event_id, partner_id, environment, status, attempts, last_error, last_attempt_at, url) VALUES ($1, $2, $3, 'pending', 1, $4, now(), $5)
     ON CONFLICT (event_id) DO UPDATE SET attempts = webhook_deliveries.attempts + 1, last_error = EXCLUDED.last_error, last_attempt_at = now(), url = EXCLUDED.url`,
    [event.id, partnerId, environment, result.ok ? null : (result.error ?? 'failed'), target.url],
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
  const [row] = (await ctx.dataSource.query('SELECT partner_seq FROM events WHERE id = $1', [eventId])) as Array<{ partner_seq: string }>;
  await finish(ctx, { id: eventId, partnerId, environment, seq: Number(row.partner_seq) }, 'failed', error);
  await ctx.dataSource.query('UPDATE webhook_endpoints SET enabled = false, updated_at = now() WHERE partner_id = $1 AND environment = $2', [partnerId, environment]);
}
