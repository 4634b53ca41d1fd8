/**
 * Month end (id `finance:month-end`, one per namespace): sleeps until 5 minutes after the next
 * month starts (UTC), then runs that month's close as the child workflow
 * `finance:month-close:<YYYY-MM-01>`: every settlement of an earlier month still open is closed
 * (its figures frozen), then what is payable is paid out in each environment. Continues as new
 * every 12 closes.
 *
 * Why a sleeping workflow and not a Temporal Schedule: the time-skipping test server runs no
 * Schedules, and this way the month end the tests skip to is the same code that runs in
 * production. A missed close is caught up: a timer that came due while no worker ran fires when
 * one returns, and each run first closes whatever earlier month is still open. A month's close
 * runs once (its child id is never reused).
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { continueAsNew, executeChild, proxyActivities, sleep, WorkflowIdReusePolicy } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { MonthCloseResult, PayoutRunInput, PayoutRunResult } from './messages';

export const MONTH_END_WORKFLOW_ID = 'finance:month-end';
export const CLOSE_GRACE_MS = 5 * 60 * 1000;
export const monthCloseWorkflowId = (before: string) => `finance:month-close:${before}`;

const finance = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
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

/** One month's close: settlements of months before `before` closed, then the payout run. */
export async function monthCloseWorkflow(input: { before: string }): Promise<MonthCloseResult> {
  const closed = await finance.closeSettlements({ before: input.before });
  const paid: PayoutRunResult[] = [];
  for (const environment of ['sandbox', 'live'] as const) paid.push(await payoutRunWorkflowBody({ environment }));
  return { closed, payouts: paid.flatMap((p) => p.payouts) };
}

async function payoutRunWorkflowBody(input: PayoutRunInput): Promise<PayoutRunResult> {
  return { environment: input.environment, payouts: await finance.runPayouts({ environment: input.environment, at: new Date().toISOString() }) };
}

/** An operator's payout run (`admin payouts run`), id `finance:payouts:<env>:<time>`: pays now what is payable. */
export async function payoutRunWorkflow(input: PayoutRunInput): Promise<PayoutRunResult> {
  return payoutRunWorkflowBody(input);
}
