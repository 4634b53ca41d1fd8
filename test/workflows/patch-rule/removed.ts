/** Release 4: the patch removed (no run started before release 3 may remain). */
import { proxyActivities } from '@temporalio/workflow';
import type { patchRuleActivities } from './activities';

const steps = proxyActivities<typeof patchRuleActivities>({ startToCloseTimeout: '10 seconds' });

export async function patchRuleWorkflow(): Promise<string> {
  return steps.newStep();
}
