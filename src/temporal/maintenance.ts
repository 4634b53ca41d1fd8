import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { FULFILMENT_RECOVERY_WORKFLOW_ID, MONTH_END_WORKFLOW_ID, NONCE_RETENTION_WORKFLOW_ID } from '../../workflows/messages';
import { startWorkflow } from './start';

/** Starts the long-running maintenance workflows once per namespace; a second call is a no-op. */
export async function ensureMaintenanceWorkflows(client: Client, taskQueue: string): Promise<void> {
  const w = { client, taskQueue };
  await startWorkflow(w, 'nonceRetentionWorkflow', {
    workflowId: NONCE_RETENTION_WORKFLOW_ID,
    args: [{ prunedTotal: 0 }],
    mode: 'singleton',
    summary: 'Prunes request nonces older than 15 minutes, every 5 minutes',
  });
  await startWorkflow(w, 'fulfilmentRecoveryWorkflow', {
    workflowId: FULFILMENT_RECOVERY_WORKFLOW_ID,
    args: [],
    mode: 'singleton',
    summary: 'Recovery sweep: unstarted fulfilments and referral windows, late webhook deliveries, every minute',
  });
  await ensureMonthEndSchedule(client, taskQueue);
  await ensureSandboxRelistSchedule(client, taskQueue);
}

/** The Schedule that lists sold sandbox names again 24 hours after their transfer completed. */
export const SANDBOX_RELIST_SCHEDULE_ID = 'maintenance:sandbox-relist';

export async function ensureSandboxRelistSchedule(client: Client, taskQueue: string): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: SANDBOX_RELIST_SCHEDULE_ID,
      spec: { intervals: [{ every: '10 minutes' }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'sandboxRelistWorkflow',
        workflowId: 'maintenance:sandbox-relist',
        taskQueue,
        args: [],
        staticSummary: 'Sandbox names sold more than 24 hours ago listed again',
      },
      // A missed run is made up by the next: only the latest matters.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '10 minutes' },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}

/** The Schedule that runs the month's close; operators pause, trigger and backfill it in the UI. */
export const MONTH_END_SCHEDULE_ID = 'finance:month-end';

/**
 * Creates the month-end Schedule (00:05 UTC on the first; a close missed while the cluster was
 * down runs when it is back, within 31 days), then cancels the sleeping month-end workflow of
 * earlier releases if one still runs, so one thing closes months.
 */
export async function ensureMonthEndSchedule(client: Client, taskQueue: string): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: MONTH_END_SCHEDULE_ID,
      spec: { calendars: [{ dayOfMonth: 1, hour: 0, minute: 5 }], timezone: 'UTC' },
      action: {
        type: 'startWorkflow',
        workflowType: 'monthCloseWorkflow',
        workflowId: 'finance:month-close',
        taskQueue,
        args: [{}],
        staticSummary: 'Month close: settlements of earlier months closed, then payouts',
      },
      policies: { overlap: ScheduleOverlapPolicy.BUFFER_ONE, catchupWindow: '31 days' },
      state: { note: 'Closes every earlier month still open and pays out; idempotent, so a trigger or backfill is safe.' },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  try {
    const sleeping = client.workflow.getHandle(MONTH_END_WORKFLOW_ID);
    const described = await sleeping.describe();
    // Not while it runs a month's close (a child): cancelling would cut that close short; the
    // next start of a worker cancels it, and a close it missed is caught up by the next one.
    if (described.status.name === 'RUNNING' && !(described.raw.pendingChildren ?? []).length) await sleeping.cancel();
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}
