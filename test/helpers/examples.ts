/**
 * Records the reference's response examples from the suite's real requests (src/api/examples.ts):
 * with EXAMPLES_WRITE=1, the test stack's app hands every route's answer here, the first
 * successful one per operation is kept, and after the last test they are written to
 * src/api/examples.json.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ResponseExample } from '../../src/api/examples';

const recorded = new Map<string, ResponseExample>();

export const recordingExamples = process.env.EXAMPLES_WRITE === '1';

export function recordAnswer(operationId: string, status: number, body: unknown): void {
  if (status >= 200 && status < 300 && !recorded.has(operationId)) recorded.set(operationId, { status, body: JSON.parse(JSON.stringify(body ?? null)) as unknown });
}

/** Writes the answers of `operations` (the partner route table's; tests' own probe routes are left out). */
export function writeExamples(projectRoot: string, operations: string[]): void {
  const sorted = Object.fromEntries([...recorded.entries()].filter(([id]) => operations.includes(id)).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(path.join(projectRoot, 'src/api/examples.json'), `${JSON.stringify(sorted, null, 2)}\n`);
}
