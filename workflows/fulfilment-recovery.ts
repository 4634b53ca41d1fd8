/**
 * Recovery sweep (id `maintenance:fulfilment-recovery`): every minute, starts the fulfilment of
 * any order recorded more than 30 s ago whose workflow was never started (the API process died
 * between committing the order and starting it, and the partner did not retry), and wakes the
 * webhook delivery of any endpoint that is behind its events, and starts the 30-day window of any
 * referred sale whose workflow was never started, and settles the card money a crash left
 * unsettled (payments left out with the processor, recorded as their sale or voided; buyers of
 * refunded or failed sales whose card was not refunded yet). Continues as new every 180 rounds
 * (three hours), or sooner when the server suggests it.
 *
 * The three steps fail independently: each is tried a few times, then given up until the next
 * round, so a step that keeps failing never holds back the others; inside a step one partner's
 * or one row's failure is logged and skipped (activities/index.ts).
 */
import { continueAsNew, isCancellation, log, patched, proxyActivities, setCurrentDetails, setWorkflowOptions, sleep, workflowInfo } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import { PATCHES } from './patches';
import { STALLED_PAYMENT_SECONDS } from './messages';
import type { Activities } from '../activities';

export { FULFILMENT_RECOVERY_WORKFLOW_ID } from './messages';

/**
 * A round was 17 history events with two activities (240 rounds, about 4,100 events); with the
 * third activity it was about 23 (180 rounds); with the fourth (stalled payments) about 29
 * (measured in test/workflows/fulfilment-recovery.test.ts), so 150 rounds stay near 4,400 events,
 * well under Temporal's 10,240-event warning.
 */
export const ROUNDS_PER_RUN = 150;

const { startUnstartedFulfilments, startUnstartedReferralWindows, wakeLateDeliveries, settleStalledPayments } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  // Each step heartbeats between its items (activities/index.ts).
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '5 seconds', maximumInterval: '20 seconds', maximumAttempts: 3 },
});

/** One step of a round; its failure is logged and the round goes on (the next round retries it). */
async function step(name: string, run: () => Promise<number>): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('recovery sweep: a step failed; the next round tries it again', { step: name, error: (err as Error).message });
  }
}

export async function fulfilmentRecoveryWorkflow(): Promise<void> {
  // A run continued as new has no start summary (the SDK's continueAsNew takes none): each run says what it is here.
  setCurrentDetails('Recovery sweep, every minute: unstarted fulfilments, referral windows, emails and applications started; late deliveries woken; card money settled. Continues as new; the next worker start starts it again if it is terminated.');
  // Referral windows were added after runs of this workflow were in flight: patched() keeps their
  // histories replaying (old runs: 240 rounds of two activities; new ones: fewer, longer rounds).
  const withReferrals = patched(PATCHES.recoveryReferralWindows.patchId);
  // Stalled payments came later still: runs started before it keep their rounds (180, three steps).
  const withPayments = withReferrals && patched(PATCHES.recoveryStalledPayments.patchId);
  const rounds = withPayments ? ROUNDS_PER_RUN : withReferrals ? 180 : 240;
  for (let round = 0; round < rounds && !workflowInfo().continueAsNewSuggested; round++) {
    if (withPayments) await step('stalled payments', () => settleStalledPayments({ olderThanSeconds: STALLED_PAYMENT_SECONDS }));
    await step('late fulfilments', () => startUnstartedFulfilments({ olderThanSeconds: 30 }));
    if (withReferrals) await step('referral windows', () => startUnstartedReferralWindows({ olderThanSeconds: 60 }));
    await step('late deliveries', () => wakeLateDeliveries());
    await sleep('1 minute', { summary: 'until the next round' });
  }
  await continueAsNew<typeof fulfilmentRecoveryWorkflow>();
}

// Worker Versioning: runs long: it moves to the current worker version, patched() keeps it replaying (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('AUTO_UPGRADE'), fulfilmentRecoveryWorkflow);
