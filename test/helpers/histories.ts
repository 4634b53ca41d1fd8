/**
 * Recorded workflow histories (test/workflows/histories/*.json). `npm run histories:record` runs
 * the suite with RECORD_HISTORIES=1, and the tests that finish a workflow in a telling way save
 * its history here; test/workflows/replay.test.ts replays every saved history against the
 * current workflow code, so a change that would break the histories in flight fails CI.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { getStack } from './stack';

export function historiesDir(): string {
  return path.join(getStack().config.projectRoot, 'test', 'workflows', 'histories');
}

/**
 * Saves the workflow's history as `<name>.json` when recording; otherwise does nothing. A history
 * already saved is kept (it stands for runs started by earlier code) unless RECORD_HISTORIES is
 * `overwrite`.
 */
export async function recordHistory(workflowId: string, name: string, options: { client?: Client; runId?: string } = {}): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  if (process.env.RECORD_HISTORIES !== 'overwrite' && existsSync(path.join(historiesDir(), `${name}.json`))) return;
  const history = await (options.client ?? getStack().env.client).workflow.getHandle(workflowId, options.runId).fetchHistory();
  mkdirSync(historiesDir(), { recursive: true });
  writeFileSync(path.join(historiesDir(), `${name}.json`), `${JSON.stringify(historyToObject(history), null, 1)}\n`);
}

/**
 * Histories are kept as protobuf's JSON object form (enums by name, 64-bit numbers as strings,
 * bytes in base64), which @temporalio/proto reads back exactly. (The SDK's historyToJSON trips
 * over two copies of protobufjs in this install.)
 */
const History = temporal.api.history.v1.History;
const FORM = { enums: String, longs: String, bytes: String } as const;

export function historyToObject(history: temporal.api.history.v1.IHistory): unknown {
  return History.toObject(History.fromObject(history as object), FORM);
}

export function historyFromObject(value: unknown): temporal.api.history.v1.History {
  return History.fromObject(value as object);
}
