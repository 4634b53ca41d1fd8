/** Waking a partner's delivery workflow after its events are committed (signal-with-start). */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { EventCounter, PartnerEvent } from '../db/entities/partner-event';
import { WebhookEndpoint } from '../db/entities/webhook-endpoint';
import { eventsAppendedSignal, webhookWorkflowId, type WebhookDeliveryInput } from '../../workflows/messages';
import { startWorkflow, type WorkflowStarter } from '../temporal/start';

/**
 * Wakes a partner's delivery without growing a busy one's history: a delivery waiting for events
 * (`idle`) is signalled (and started when none runs); a busy one is only started when none runs,
 * a start that finds it running (USE_EXISTING) writes nothing to its history.
 */
export async function wakeDelivery(w: WorkflowStarter, partnerId: string, environment: Environment, idle: boolean): Promise<void> {
  const spec = {
    workflowId: webhookWorkflowId(partnerId, environment),
    args: [{ partnerId, environment }] as [WebhookDeliveryInput],
    mode: 'singleton' as const,
    summary: `Webhook delivery for partner ${partnerId} (${environment})`,
    details: `Pushes the partner's events in order; the event being delivered is the pending activity \`deliverEvent\`. \`npm run --silent admin -- webhooks deliveries --partner <name> --env ${environment} --json\` lists recent attempts.`,
    attributes: { partnerId, environment },
  };
  await startWorkflow({ client: w.client, taskQueue: w.webhookTaskQueue ?? w.taskQueue }, 'webhookDeliveryWorkflow', { ...spec, signal: idle ? eventsAppendedSignal : undefined });
}

/**
 * After a transaction that appended events for the partner: wake its delivery if it has an
 * enabled endpoint. Best effort: the recovery sweep wakes any delivery left behind.
 */
export async function notifyEventsAppended(dataSource: DataSource, w: WorkflowStarter, partnerId: string, environment: Environment): Promise<void> {
  try {
    const endpoint = await dataSource.getRepository(WebhookEndpoint).findOne({ select: { enabled: true, deliveryIdle: true }, where: { partnerId, environment } });
    if (endpoint?.enabled) await wakeDelivery(w, partnerId, environment, endpoint.deliveryIdle);
  } catch {
    // The sweep (maintenance:fulfilment-recovery) catches up within a minute.
  }
}

export interface LateDelivery {
  partnerId: string;
  environment: Environment;
  idle: boolean;
}

/** Late deliveries the sweep wakes in one round (each one start or signal). */
export const LATE_WAKES_PER_ROUND = 200;

/**
 * Endpoints whose delivery position is behind their partner's last event, at most `limit`, in
 * turn: the least recently woken first (never woken before all), then the one whose next event
 * has waited longest. One row per partner and environment, so no partner crowds out another, and
 * with more late deliveries than a round wakes, every one is reached in the rounds after.
 */
export async function lateDeliveries(dataSource: DataSource, limit = LATE_WAKES_PER_ROUND): Promise<LateDelivery[]> {
  const rows = await dataSource
    .getRepository(WebhookEndpoint)
    .createQueryBuilder('w')
    .innerJoin(EventCounter, 'c', 'c.partnerId = w.partnerId AND c.environment = w.environment')
    .leftJoin(PartnerEvent, 'e', 'e.partnerId = w.partnerId AND e.environment = w.environment AND e.partnerSeq = w.deliveredThroughSeq + 1')
    .where('w.enabled AND c.lastSeq > w.deliveredThroughSeq')
    .select(['w.partnerId', 'w.environment', 'w.deliveryIdle'])
    .orderBy('w.wokenAt', 'ASC', 'NULLS FIRST')
    .addOrderBy('e.createdAt', 'ASC', 'NULLS LAST')
    .limit(limit)
    .getMany();
  return rows.map((r) => ({ partnerId: r.partnerId, environment: r.environment, idle: r.deliveryIdle }));
}

/** The sweep woke this delivery now: it goes to the back of the turn. */
export async function markWoken(dataSource: DataSource, partnerId: string, environment: Environment): Promise<void> {
  await dataSource.getRepository(WebhookEndpoint).update({ partnerId, environment }, { wokenAt: () => 'now()' });
}
