/** Release 3: the patch deprecated (no run of release 1 may remain): the new step only. */
import { deprecatePatch, proxyActivities } from '@temporalio/workflow';
import type { patchRuleActivities } from './activities';

const steps = proxyActivities<typeof patchRuleActivities>({ startToCloseTimeout: '10 seconds' });

export async function patchRuleWorkflow(): Promise<string> {
  deprecatePatch('patch-rule-step');
  return steps.newStep();
}
