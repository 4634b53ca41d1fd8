/**
 * Month end. In production a Temporal Schedule (`finance:month-end`, src/temporal/maintenance.ts)
 * starts `monthCloseWorkflow` at 00:05 UTC on the first of every month; operators pause, trigger
 * and backfill it in the UI. The close closes every settlement of an earlier month still open
 * (their figures frozen), then pays out what is payable in each environment. A missed close is
 * caught up: the schedule's catch-up window runs it when the server is back, and each close also
 * closes whatever earlier month is still open. Closing and paying are idempotent, so a trigger or
 * backfill on top of the scheduled run changes nothing twice.
 *
 * `monthEndWorkflow` is the sleeping workflow that did this before the Schedule: kept registered
 * so that runs started by earlier releases finish (ensureMaintenanceWorkflows cancels a running
 * one once the Schedule exists); nothing starts it any more.
 */
import { defineSearchAttributeKey, SearchAttributeType, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { continueAsNew, executeChild, proxyActivities, setWorkflowOptions, sleep, workflowInfo, WorkflowIdReusePolicy } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';
import type { MonthCloseResult, PayoutRunInput, PayoutRunResult } from './messages';

export { MONTH_END_WORKFLOW_ID, CLOSE_GRACE_MS } from './messages';
import { CLOSE_GRACE_MS } from './messages';
export const monthCloseWorkflowId = (before: string) => `finance:month-close:${before}`;

const finance = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  // Closing and paying heartbeat per settlement and per partner.
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', maximumInterval: '5 minutes' },
});

/** `YYYY-MM-01` of the month `at` falls in, or of the month after. */
function monthStart(at: Date, monthsAhead = 0): string {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + monthsAhead, 1)).toISOString().slice(0, 10);
}

async function closeMonth(before: string): Promise<void> {
  try {
    await executeChild(monthCloseWorkflow, {
      workflowId: monthCloseWorkflowId(before),
      args: [{ before }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

export async function monthEndWorkflow(): Promise<void> {
  await closeMonth(monthStart(new Date()));
  for (let round = 0; round < 12; round++) {
    const before = monthStart(new Date(), 1);
    await sleep(Date.parse(`${before}T00:00:00Z`) + CLOSE_GRACE_MS - Date.now());
    await closeMonth(before);
  }
  await continueAsNew<typeof monthEndWorkflow>();
}

/** Set by a Schedule on each run it starts: the time the run was due (a catch-up or a backfill starts later). */
const SCHEDULED_START = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/**
 * One month's close: settlements of months before `before` closed, then the payout run. The
 * Schedule gives no input: `before` is then the first of the month the run was due in
 * (TemporalScheduledStartTime), so a run caught up after an outage, or backfilled by an operator,
 * closes the month it was due for, not the one it happens to run in; without a Schedule, the
 * month it started in (the workflow's clock).
 */
export async function monthCloseWorkflow(input: { before?: string } = {}): Promise<MonthCloseResult> {
  const before = input.before ?? monthStart(workflowInfo().typedSearchAttributes.get(SCHEDULED_START) ?? new Date());
  const closed = await finance.closeSettlements({ before });
  const paid: PayoutRunResult[] = [];
  for (const environment of ['sandbox', 'live'] as const) paid.push(await payoutRunWorkflowBody({ environment }));
  return { before, closed, payouts: paid.flatMap((p) => p.payouts) };
}

async function payoutRunWorkflowBody(input: PayoutRunInput): Promise<PayoutRunResult> {
  return { environment: input.environment, payouts: await finance.runPayouts({ environment: input.environment, at: new Date().toISOString() }) };
}

/** An operator's payout run (`admin payouts run`), id `finance:payouts:<env>:<time>`: pays now what is payable. */
export async function payoutRunWorkflow(input: PayoutRunInput): Promise<PayoutRunResult> {
  return payoutRunWorkflowBody(input);
}

// Worker Versioning: ends within days: it stays on the worker version that started it (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('PINNED'), monthCloseWorkflow);
// Worker Versioning: ends within days: it stays on the worker version that started it (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('PINNED'), payoutRunWorkflow);
// Worker Versioning: runs long: it moves to the current worker version, patched() keeps it replaying (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('AUTO_UPGRADE'), monthEndWorkflow);
