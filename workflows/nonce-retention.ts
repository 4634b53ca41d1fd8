/**
 * Nonce retention: request nonces guard against replay only while a request's timestamp can
 * still pass the ±300 s skew check, so they are kept for 15 minutes and then pruned. This
 * workflow runs forever, one per namespace (id `maintenance:nonce-retention`): prune, sleep
 * 5 minutes, and continue-as-new every 288 rounds (a day) to keep its history short.
 */
import { continueAsNew, proxyActivities, setCurrentDetails, setWorkflowOptions, sleep } from '@temporalio/workflow';
import type { NonceRetentionState } from './messages';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';

export { NONCE_RETENTION_WORKFLOW_ID } from './messages';
export const NONCE_RETENTION_MS = 15 * 60 * 1000;
export const NONCE_PRUNE_INTERVAL = '5 minutes';
const ROUNDS_PER_RUN = 288;

const { pruneNonces } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute' },
});

export async function nonceRetentionWorkflow(state: NonceRetentionState = { prunedTotal: 0 }): Promise<void> {
  // A run continued as new has no start summary (the SDK's continueAsNew takes none): each run says what it is here.
  setCurrentDetails(`Prunes request nonces older than 15 minutes, every 5 minutes (${state.prunedTotal} pruned by earlier runs). Safe to terminate: the next worker start starts it again.`);
  let prunedTotal = state.prunedTotal;
  for (let round = 0; round < ROUNDS_PER_RUN; round++) {
    // Workflow time, so the cut-off follows the one clock Temporal keeps (and skips in tests).
    const seenBefore = new Date(Date.now() - NONCE_RETENTION_MS).toISOString();
    prunedTotal += await pruneNonces({ seenBefore });
    await sleep(NONCE_PRUNE_INTERVAL, { summary: 'until the next prune' });
  }
  await continueAsNew<typeof nonceRetentionWorkflow>({ prunedTotal });
}

// Worker Versioning: runs long: it moves to the current worker version, patched() keeps it replaying (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('AUTO_UPGRADE'), nonceRetentionWorkflow);
