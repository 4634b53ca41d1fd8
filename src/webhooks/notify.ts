/** Waking a partner's delivery workflow after its events are committed (signal-with-start). */
import { WorkflowIdConflictPolicy } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { EventCounter } from '../db/entities/partner-event';
import { WebhookEndpoint } from '../db/entities/webhook-endpoint';
import { webhookDeliveryWorkflow } from '../../workflows';
import { eventsAppendedSignal, webhookWorkflowId } from '../../workflows/messages';
import { Environment as EnvironmentAttr, PartnerId } from '../../workflows/search-attributes';
import type { WorkflowStarter } from '../orders/start-workflows';

export async function wakeDelivery(w: WorkflowStarter, partnerId: string, environment: Environment): Promise<void> {
  await w.client.workflow.signalWithStart(webhookDeliveryWorkflow, {
    workflowId: webhookWorkflowId(partnerId, environment),
    taskQueue: w.taskQueue,
    args: [{ partnerId, environment }],
    signal: eventsAppendedSignal,
    signalArgs: [],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    typedSearchAttributes: [
      { key: PartnerId, value: partnerId },
      { key: EnvironmentAttr, value: environment },
    ],
  });
}

/**
 * After a transaction that appended events for the partner: wake its delivery if it has an
 * enabled endpoint. Best effort: the recovery sweep wakes any delivery left behind.
 */
export async function notifyEventsAppended(dataSource: DataSource, w: WorkflowStarter, partnerId: string, environment: Environment): Promise<void> {
  try {
    if (await dataSource.getRepository(WebhookEndpoint).existsBy({ partnerId, environment, enabled: true })) await wakeDelivery(w, partnerId, environment);
  } catch {
    // The sweep (maintenance:fulfilment-recovery) catches up within a minute.
  }
}

/** Endpoints whose delivery position is behind their partner's last event. */
export async function lateDeliveries(dataSource: DataSource): Promise<Array<{ partnerId: string; environment: Environment }>> {
  const rows = await dataSource
    .getRepository(WebhookEndpoint)
    .createQueryBuilder('w')
    .innerJoin(EventCounter, 'c', 'c.partner_id = w.partner_id AND c.environment = w.environment')
    .where('w.enabled AND c.last_seq > w.delivered_through_seq')
    .select(['w.partnerId', 'w.environment'])
    .limit(500)
    .getMany();
  return rows.map((r) => ({ partnerId: r.partnerId, environment: r.environment }));
}
