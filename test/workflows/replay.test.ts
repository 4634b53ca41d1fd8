import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import * as workflows from '../../workflows';
import { historiesDir, historyFromObject } from '../helpers/histories';
import { getStack } from '../helpers/stack';

describe('recorded workflow histories replay against the current code (safe workflow changes)', () => {
  it('every workflow type has recorded histories, and every one of them replays without nondeterminism', async function () {
    if (process.env.RECORD_HISTORIES) this.skip(); // being recorded in this very run
    this.timeout(120_000);
    const files = readdirSync(historiesDir()).filter((f) => f.endsWith('.json'));
    const histories = files.map((f) => ({ workflowId: path.basename(f, '.json'), history: historyFromObject(JSON.parse(readFileSync(path.join(historiesDir(), f), 'utf8'))) }));
    const types = new Set(histories.map(({ history }) => history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name));
    for (const name of Object.keys(workflows)) assert.ok(types.has(name), `a recorded history of ${name} (npm run histories:record)`);

    const failures: string[] = [];
    let replayed = 0;
    for await (const result of Worker.runReplayHistories({ workflowBundle: getStack().workflowBundle }, histories)) {
      replayed++;
      if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message}`);
    }
    assert.equal(replayed, histories.length);
    assert.deepEqual(failures, []);
  });
});
