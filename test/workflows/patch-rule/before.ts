/** Release 1: the old step only. */
import { proxyActivities } from '@temporalio/workflow';
import type { patchRuleActivities } from './activities';

const steps = proxyActivities<typeof patchRuleActivities>({ startToCloseTimeout: '10 seconds' });

export async function patchRuleWorkflow(): Promise<string> {
  return steps.oldStep();
}
