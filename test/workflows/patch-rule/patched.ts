/** Release 2: the new step behind patched(); runs started by release 1 keep the old one. */
import { patched, proxyActivities } from '@temporalio/workflow';
import type { patchRuleActivities } from './activities';

const steps = proxyActivities<typeof patchRuleActivities>({ startToCloseTimeout: '10 seconds' });

export async function patchRuleWorkflow(): Promise<string> {
  return patched('patch-rule-step') ? steps.newStep() : steps.oldStep();
}
