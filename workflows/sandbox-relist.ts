/**
 * Sandbox inventory never runs out (CONTRACT §15): a sandbox name sold is listed again 24 hours
 * after its transfer completed, so a script can never empty every partner's sandbox. Started
 * every 10 minutes by the Schedule `maintenance:sandbox-relist` (src/temporal/maintenance.ts);
 * the cut-off is this workflow's clock. Returns how many names were listed again.
 */
import { proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';

export const SANDBOX_RELIST_AFTER_MS = 24 * 60 * 60 * 1000;

const { relistSandboxNames } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute', maximumAttempts: 5 },
});

export async function sandboxRelistWorkflow(): Promise<number> {
  return relistSandboxNames({ completedBefore: new Date(Date.now() - SANDBOX_RELIST_AFTER_MS).toISOString() });
}

// Worker Versioning: ends within seconds: it stays on the worker version that started it (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('PINNED'), sandboxRelistWorkflow);
