/**
 * Recovery sweep (id `maintenance:fulfilment-recovery`): every minute, starts the fulfilment of
 * any order recorded more than 30 s ago whose workflow was never started (the API process died
 * between committing the order and starting it, and the partner did not retry), and wakes the
 * webhook delivery of any endpoint that is behind its events, and starts the 30-day window of any
 * referred sale whose workflow was never started. Continues as new every 240 rounds
 * (four hours), or sooner when the server suggests it.
 */
import { continueAsNew, patched, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';

export const FULFILMENT_RECOVERY_WORKFLOW_ID = 'maintenance:fulfilment-recovery';

/**
 * A round was 17 history events with two activities (240 rounds, about 4,100 events); with the
 * third activity it is about 23 (measured in test/workflows/fulfilment-recovery.test.ts), so 180
 * rounds stay near 4,100 events, well under Temporal's 10,240-event warning.
 */
export const ROUNDS_PER_RUN = 180;

const { startUnstartedFulfilments, startUnstartedReferralWindows, wakeLateDeliveries } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute' },
});

export async function fulfilmentRecoveryWorkflow(): Promise<void> {
  // Referral windows were added after runs of this workflow were in flight: patched() keeps their
  // histories replaying (old runs: 240 rounds of two activities; new ones: fewer, longer rounds).
  const withReferrals = patched('start-unstarted-referral-windows');
  const rounds = withReferrals ? ROUNDS_PER_RUN : 240;
  for (let round = 0; round < rounds && !workflowInfo().continueAsNewSuggested; round++) {
    await startUnstartedFulfilments({ olderThanSeconds: 30 });
    if (withReferrals) await startUnstartedReferralWindows({ olderThanSeconds: 60 });
    await wakeLateDeliveries();
    await sleep('1 minute');
  }
  await continueAsNew<typeof fulfilmentRecoveryWorkflow>();
}
