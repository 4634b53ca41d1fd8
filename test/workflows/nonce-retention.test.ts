import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { nonceRetentionWorkflow } from '../../workflows';
import { getStack, ownTemporal } from '../helpers/stack';
import { waitFor } from '../helpers/wait';
import { recordHistory } from '../helpers/histories';

async function nonceExists(keyId: string, nonce: string): Promise<boolean> {
  const rows = (await getStack().dataSource.query('SELECT 1 FROM request_nonces WHERE key_id = $1 AND nonce = $2', [keyId, nonce])) as unknown[];
  return rows.length === 1;
}

describe('nonce retention workflow (time-skipping server)', () => {
  ownTemporal();
  it('prunes nonces 15 minutes after they were seen, every 5 minutes, on the workflow clock', async () => {
    const s = getStack();
    const keyId = `pk_test_retention${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const stale = randomUUID();
    const fresh = randomUUID();
    const workflowNow = await s.env.currentTimeMs();
    const at = (msAgo: number) => new Date(workflowNow - msAgo).toISOString();
    await s.dataSource.query('INSERT INTO request_nonces (key_id, nonce, seen_at) VALUES ($1, $2, $3), ($1, $4, $5)', [
      keyId,
      stale,
      at(20 * 60_000),
      fresh,
      at(60_000),
    ]);

    const taskQueue = `retention-${randomUUID()}`;
    const worker = await Worker.create({
      connection: s.env.nativeConnection,
      taskQueue,
      workflowBundle: s.workflowBundle,
      activities: createActivities({ dataSource: s.dataSource, masterKey: s.masterKey }),
    });
    await worker.runUntil(async () => {
      const handle = await s.env.client.workflow.start(nonceRetentionWorkflow, {
        workflowId: `nonce-retention-test-${randomUUID()}`,
        taskQueue,
        args: [{ prunedTotal: 0 }],
      });
      // First round: only the nonce seen 20 minutes ago is past the 15-minute retention.
      await waitFor(() => nonceExists(keyId, stale), (exists) => !exists, 30_000, 'the stale nonce pruned');
      assert.equal(await nonceExists(keyId, fresh), true);

      // Fifteen minutes later (skipped, not waited), the next rounds prune the other one too.
      await s.env.sleep('15 minutes');
      await waitFor(() => nonceExists(keyId, fresh), (exists) => !exists, 30_000, 'the other nonce pruned');
      await recordHistory(handle.workflowId, 'nonce-retention');
      await handle.terminate('test done');
    });
  });
});
