/** Operators' money commands (CONTRACT §12): a payout run now, and reconcile. */
import { randomUUID } from 'node:crypto';
import type { Config, Environment } from '../config';
import { payoutRunWorkflow } from '../../workflows';
import type { PayoutSummary } from '../../workflows/messages';
import { withTemporal } from './temporal';

/**
 * Pays now what is payable, exactly as the month-end run does, as the workflow
 * `finance:payouts:<env>:<id>` so that operators see it in the Temporal UI. Answers the payouts made.
 */
export async function runPayoutsNow(config: Config, environment: Environment): Promise<PayoutSummary[]> {
  return withTemporal(config, async (client) => {
    const result = await client.workflow.execute(payoutRunWorkflow, {
      workflowId: `finance:payouts:${environment}:${new Date().toISOString()}:${randomUUID().slice(0, 8)}`,
      taskQueue: config.temporal.taskQueue,
      args: [{ environment }],
    });
    return result.payouts;
  });
}
