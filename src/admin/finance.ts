/** Operators' money commands (CONTRACT §12): a payout run now, and reconcile. */
import { randomUUID } from 'node:crypto';
import type { Config, Environment } from '../config';
import type { PayoutRunResult, PayoutSummary } from '../../workflows/messages';
import { withTemporal } from './temporal';
import { startWorkflow } from '../temporal/start';

/**
 * Pays now what is payable, exactly as the month-end run does, as the workflow
 * `finance:payouts:<env>:<id>` so that operators see it in the Temporal UI. Answers the payouts made.
 */
export async function runPayoutsNow(config: Config, environment: Environment): Promise<PayoutSummary[]> {
  return withTemporal(config, async (client) => {
    const handle = await startWorkflow({ client, taskQueue: config.temporal.taskQueue }, 'payoutRunWorkflow', {
      workflowId: `finance:payouts:${environment}:${new Date().toISOString()}:${randomUUID().slice(0, 8)}`,
      args: [{ environment }],
      mode: 'fresh',
      summary: `Payout run (${environment}), started by an operator`,
      details: 'What the scheduled month close pays, now: every partner balance that is payable. Idempotent: a payout already made is not made again.',
    });
    return ((await handle!.result()) as PayoutRunResult).payouts;
  });
}
