/**
 * Recovery sweep (id `maintenance:fulfilment-recovery`): every minute, starts the fulfilment of
 * any order recorded more than 30 s ago whose workflow was never started (the API process died
 * between committing the order and starting it, and the partner did not retry), and wakes the
 * webhook delivery of any endpoint that is behind its events. Continues as new
 * every 1440 rounds (a day).
 */
import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';

export const FULFILMENT_RECOVERY_WORKFLOW_ID = 'maintenance:fulfilment-recovery';

const { startUnstartedFulfilments, wakeLateDeliveries } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute' },
});

export async function fulfilmentRecoveryWorkflow(): Promise<void> {
  for (let round = 0; round < 1440; round++) {
    await startUnstartedFulfilments({ olderThanSeconds: 30 });
    await wakeLateDeliveries();
    await sleep('1 minute');
  }
  await continueAsNew<typeof fulfilmentRecoveryWorkflow>();
}
