import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import * as workflows from '../../workflows';
import { WORKFLOW_TYPES, type WorkflowArgs, type WorkflowType } from '../../workflows/messages';
import { getStack } from '../helpers/stack';

// Compiles only while every name in the table is a registered workflow taking exactly those arguments.
const registered: { [K in keyof WorkflowArgs]: (...args: WorkflowArgs[K]) => Promise<unknown> } = workflows;
// Compiles only while the run-time list holds every name of the table.
const listed: Record<WorkflowType, true> = Object.fromEntries(WORKFLOW_TYPES.map((t) => [t, true])) as Record<(typeof WORKFLOW_TYPES)[number], true>;

/** Modules of workflows/ that hold names and types only, which the API and activities may import. */
const SHARED = ['messages', 'brokerage-messages', 'search-attributes', 'patches'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? sources(file) : name.endsWith('.ts') ? [file] : [];
  });
}

describe('workflows are started by name from one catalog, and no import circle runs through them', () => {
  it('the catalog (WorkflowArgs) names every workflow the worker registers, and nothing else', () => {
    assert.ok(registered);
    assert.deepEqual(Object.keys(listed).sort(), Object.keys(workflows).sort(), 'the worker registers exactly the catalog');
  });

  it('src/ and activities/ import only the shared names and types of workflows/, never workflow code', () => {
    const root = getStack().config.projectRoot;
    const offenders: string[] = [];
    for (const file of [...sources(path.join(root, 'src')), ...sources(path.join(root, 'activities'))]) {
      for (const [, target] of readFileSync(file, 'utf8').matchAll(/from '((?:\.\.\/)+workflows(?:\/[\w-]+)?)'/g)) {
        const module = target.split('/').at(-1)!;
        if (!SHARED.includes(module)) offenders.push(`${path.relative(root, file)} imports ${target}`);
      }
    }
    assert.deepEqual(offenders, []);
  });

  it('activities start no workflow themselves: the starters come through their deps (src/temporal/starters.ts)', () => {
    const root = getStack().config.projectRoot;
    const offenders: string[] = [];
    const starting = /from '[^']*(?:@temporalio\/client|temporal\/start|temporal\/starters|orders\/start-workflows)'|(?<![.\w])(?:startWorkflow|startOrderFulfilment|startReferralCommission|wakeDelivery|notifyEventsAppended)\(/;
    for (const file of sources(path.join(root, 'activities'))) {
      const text = readFileSync(file, 'utf8').replace(/^import type .*$/gm, '');
      const found = starting.exec(text);
      if (found) offenders.push(`${path.relative(root, file)}: ${found[0]}`);
    }
    assert.deepEqual(offenders, []);
  });
});
