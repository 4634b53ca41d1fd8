import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensurePromtool } from '../../src/temporal/tools';
import { getStack } from '../helpers/stack';

const run = promisify(execFile);

/**
 * The alerts evaluated as Prometheus does, by its own promtool (built with Go into the tool
 * cache): the rules are valid, and deploy/prometheus/alerts.test.yml shows the release alerts
 * firing on the series a stalled release leaves, only after their `for`, and not on healthy ones.
 */
describe('alerts (deploy/prometheus/alerts.yml), evaluated by promtool', function () {
  this.timeout(120_000);
  const dir = () => path.join(getStack().config.projectRoot, 'deploy', 'prometheus');
  let promtool: string;

  before(async () => {
    const built = await ensurePromtool(getStack().config.toolCacheDir);
    if (!built) throw new Error('promtool is built with Go, and there is no Go toolchain here');
    promtool = built;
  });

  it('the rules are valid Prometheus rules', async () => {
    const { stdout } = await run(promtool, ['check', 'rules', 'alerts.yml'], { cwd: dir() });
    assert.match(stdout, /SUCCESS/);
  });

  it('the release alerts fire in their unit tests (workflow task failures, a version with pinned runs and no poller, the sweep stalled, activities waiting for a worker), and stay quiet otherwise', async () => {
    const result = await run(promtool, ['test', 'rules', 'alerts.test.yml'], { cwd: dir() }).catch((err: { stdout: string; stderr: string }) => err);
    assert.match(`${result.stdout}${result.stderr}`, /SUCCESS/, `${result.stdout}\n${result.stderr}`);
  });

  it('an alert that would not fire fails its unit test (the harness can fail): the same expectation against a rule that never fires', async () => {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'alerts-'));
    try {
      // WorkflowTaskFailures with a threshold no series reaches.
      const rules = readFileSync(path.join(dir(), 'alerts.yml'), 'utf8').replace('increase(temporal_workflow_task_execution_failed[10m])) > 0', 'increase(temporal_workflow_task_execution_failed[10m])) > 1e9');
      assert.notEqual(rules, readFileSync(path.join(dir(), 'alerts.yml'), 'utf8'), 'the rule to break was found');
      writeFileSync(path.join(scratch, 'alerts.yml'), rules);
      writeFileSync(path.join(scratch, 'alerts.test.yml'), readFileSync(path.join(dir(), 'alerts.test.yml'), 'utf8'));
      const result = await run(promtool, ['test', 'rules', 'alerts.test.yml'], { cwd: scratch }).then(
        () => undefined,
        (err: { stdout: string; stderr: string }) => err,
      );
      assert.ok(result, 'promtool failed the test of the broken rule');
      assert.match(`${result.stdout}${result.stderr}`, /WorkflowTaskFailures/);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
