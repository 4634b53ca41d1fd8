import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { patchRuleActivities } from './patch-rule/activities';
import { getStack, ownTemporal, quietBundlerLogger } from '../helpers/stack';

type Release = 'before' | 'patched' | 'deprecated' | 'removed';

/**
 * The rule for retiring a patch (docs/design/testing.md, Changing a workflow safely), shown with
 * one workflow in four releases (test/workflows/patch-rule/): its old step; the new step behind
 * patched(); deprecatePatch(); the patch removed. A history is replayed against each later
 * release, as a query, the UI or a reset replays a run open or closed within retention.
 */
describe('retiring a workflow patch: which histories each step can still replay', function () {
  this.timeout(120_000);
  ownTemporal();
  const bundles = new Map<Release, { code: string }>();
  const histories = new Map<Release, temporal.api.history.v1.IHistory>();

  before(async () => {
    for (const release of ['before', 'patched', 'deprecated', 'removed'] as const) {
      bundles.set(release, await bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'patch-rule', `${release}.js`), logger: quietBundlerLogger }));
    }
    // A run of each of the first three releases, to its end on the test server.
    const s = getStack();
    for (const release of ['before', 'patched', 'deprecated'] as const) {
      const taskQueue = `patch-rule-${release}-${randomUUID()}`;
      const worker = await Worker.create({ connection: s.env.nativeConnection, taskQueue, workflowBundle: bundles.get(release)!, activities: patchRuleActivities });
      const workflowId = `patch-rule-${release}-${randomUUID()}`;
      const result = await worker.runUntil(s.env.client.workflow.execute('patchRuleWorkflow', { workflowId, taskQueue }));
      assert.equal(result, release === 'before' ? 'old' : 'new');
      histories.set(release, await s.env.client.workflow.getHandle(workflowId).fetchHistory());
    }
  });

  /** The replay's error message, or undefined when the history replays. */
  async function replay(history: Release, on: Release): Promise<string | undefined> {
    try {
      await Worker.runReplayHistory({ workflowBundle: bundles.get(on)! }, histories.get(history)!, `${history}-on-${on}`);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  it('deprecatePatch() replays a run that took the patch (its marker), but not one that never met it: deprecate only when no run within retention lacks the marker', async () => {
    assert.equal(await replay('before', 'patched'), undefined, 'patched() keeps the old branch for runs started before it');
    assert.equal(await replay('patched', 'deprecated'), undefined, 'a history recorded with the patch branch still replays after the deprecation');
    assert.ok(await replay('before', 'deprecated'), 'a run of the old branch fails once the patch is deprecated');
  });

  it('removing the patch fails the replay of a run that recorded patched(): remove only when no run within retention started before the deprecation', async () => {
    assert.match((await replay('patched', 'removed')) ?? 'replayed', /patch|nondetermin/i, 'a run recorded by patched() needs deprecatePatch() to replay');
    assert.equal(await replay('deprecated', 'removed'), undefined, 'a run started after the deprecation replays without it');
  });
});
