/** Waking a partner's delivery workflow after its events are committed (signal-with-start). */
import { WorkflowIdConflictPolicy } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
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
    const rows = (await dataSource.query('SELECT 1 FROM webhook_endpoints WHERE partner_id = $1 AND environment = $2 AND enabled', [partnerId, environment])) as unknown[];
    if (rows.length) await wakeDelivery(w, partnerId, environment);
  } catch {
    // The sweep (maintenance:fulfilment-recovery) catches up within a minute.
  }
}

/** Endpoints whose delivery position is behind their partner's last event. */
export async function lateDeliveries(dataSource: DataSource): Promise<Array<{ partnerId: string; environment: Environment }>> {
  const rows = (await dataSource.query(
    `SELECT w.partner_id, w.environment FROM webhook_endpoints w
     JOIN event_counters c ON c.partner_id = w.partner_id AND c.environment = w.environment
     WHERE w.enabled AND c.last_seq > w.delivered_through_seq LIMIT 500`,
  )) as Array<{ partner_id: string; environment: Environment }>;
  return rows.map((r) => ({ partnerId: r.partner_id, environment: r.environment }));
}
