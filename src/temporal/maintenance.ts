import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, WorkflowNotFoundError, type Client, type ScheduleOptions } from '@temporalio/client';
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
    details: 'Signed requests carry a nonce kept 15 minutes against replays; this loop deletes older ones in batches and continues as new now and then. Safe to terminate: the next worker start starts it again.',
  });
  await startWorkflow(w, 'fulfilmentRecoveryWorkflow', {
    workflowId: FULFILMENT_RECOVERY_WORKFLOW_ID,
    args: [],
    mode: 'singleton',
    summary: 'Recovery sweep, every minute: unstarted work, late deliveries and emails, card money',
    details:
      'Each round: card money a crash left unsettled, fulfilments and referral windows never started, late webhook deliveries (in turn), emails and partner applications whose workflow was never started. Each step fails alone and is tried again next round; its end sets partner_api_recovery_sweep_last_round_timestamp_seconds (alert RecoverySweepStalled). Safe to terminate: the next worker start starts it again.',
  });
  await ensureMonthEndSchedule(client, taskQueue);
  await ensureSandboxRelistSchedule(client, taskQueue);
}

/**
 * Creates the Schedule, or, when one of that id exists (an earlier release made it), brings its
 * spec, action and policies to this release's while keeping its state (an operator's pause and
 * note stay), so a changed spec or action reaches running clusters.
 */
async function ensureSchedule(client: Client, options: ScheduleOptions): Promise<void> {
  try {
    await client.schedule.create(options);
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(options.scheduleId).update((previous) => ({
      ...previous,
      spec: options.spec,
      action: options.action,
      policies: { ...previous.policies, ...options.policies },
    }));
  }
}

/** The Schedule that lists sold sandbox names again 24 hours after their transfer completed. */
export const SANDBOX_RELIST_SCHEDULE_ID = 'maintenance:sandbox-relist';

export async function ensureSandboxRelistSchedule(client: Client, taskQueue: string): Promise<void> {
  await ensureSchedule(client, {
    scheduleId: SANDBOX_RELIST_SCHEDULE_ID,
    spec: { intervals: [{ every: '10 minutes' }] },
    action: {
      type: 'startWorkflow',
      workflowType: 'sandboxRelistWorkflow',
      workflowId: 'maintenance:sandbox-relist',
      taskQueue,
      args: [],
      staticSummary: 'Sandbox names sold more than 24 hours ago listed again',
      staticDetails: 'Sandbox inventory never runs out (CONTRACT §15): a sandbox name whose transfer completed over 24 hours ago is listed again. Idempotent: an extra or missed run changes nothing twice.',
    },
    // A missed run is made up by the next: only the latest matters.
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '10 minutes' },
  });
}

/** The Schedule that runs the month's close; operators pause, trigger and backfill it in the UI. */
export const MONTH_END_SCHEDULE_ID = 'finance:month-end';

/**
 * Creates the month-end Schedule (00:05 UTC on the first; a close missed while the cluster was
 * down runs when it is back, within 31 days), or updates an earlier release's to this one's, then cancels the sleeping month-end workflow of
 * earlier releases if one still runs, so one thing closes months.
 */
export async function ensureMonthEndSchedule(client: Client, taskQueue: string): Promise<void> {
  await ensureSchedule(client, {
    scheduleId: MONTH_END_SCHEDULE_ID,
    spec: { calendars: [{ dayOfMonth: 1, hour: 0, minute: 5 }], timezone: 'UTC' },
    action: {
      type: 'startWorkflow',
      workflowType: 'monthCloseWorkflow',
      workflowId: 'finance:month-close',
      taskQueue,
      args: [{}],
      staticSummary: 'Month close: settlements of earlier months closed, then payouts',
      staticDetails: 'Closes every month before this one still open, then pays what is payable. Closing and paying are idempotent: pause, trigger or backfill it here (runbook: The ledger).',
    },
    policies: { overlap: ScheduleOverlapPolicy.BUFFER_ONE, catchupWindow: '31 days' },
    state: { note: 'Closes every earlier month still open and pays out; idempotent, so a trigger or backfill is safe.' },
  });
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
