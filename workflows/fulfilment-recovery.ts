/**
 * Recovery sweep (id `maintenance:fulfilment-recovery`): every minute, starts the fulfilment of
 * any order recorded more than 30 s ago whose workflow was never started (the API process died
 * between committing the order and starting it, and the partner did not retry), and wakes the
 * webhook delivery of any endpoint that is behind its events. Continues as new every 240 rounds
 * (four hours), or sooner when the server suggests it.
 */
import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';

export const FULFILMENT_RECOVERY_WORKFLOW_ID = 'maintenance:fulfilment-recovery';

/**
 * A round is 17 history events (two activities, a timer and the three workflow tasks between
 * them; measured in test/workflows/fulfilment-recovery.test.ts), so 240 rounds is about 4,100
 * events, well under Temporal's 10,240-event warning. A day of rounds (1440) was about 24,500.
 */
export const ROUNDS_PER_RUN = 240;

const { startUnstartedFulfilments, wakeLateDeliveries } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute' },
});

export async function fulfilmentRecoveryWorkflow(): Promise<void> {
  for (let round = 0; round < ROUNDS_PER_RUN && !workflowInfo().continueAsNewSuggested; round++) {
    await startUnstartedFulfilments({ olderThanSeconds: 30 });
    await wakeLateDeliveries();
    await sleep('1 minute');
  }
  await continueAsNew<typeof fulfilmentRecoveryWorkflow>();
}
