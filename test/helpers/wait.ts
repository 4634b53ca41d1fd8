import { inspect } from 'node:util';

/** The first pause between two reads, and the longest: a state reached at once is seen at once, a slow one is not read in a tight loop. */
const FIRST_PAUSE_MS = 20;
const LONGEST_PAUSE_MS = 250;

/**
 * How long an inventory change may take to show in search results: both engines follow the
 * inventory through the listing change feed, so a change shows once its notification is heard, a
 * moment after its commit.
 */
export const SEARCH_SHOWS_CHANGE_WITHIN_MS = 1_000;

/**
 * The tests' one wait for a state: reads with `read` until `ok` holds for what it read, and
 * returns that value. After `ms` it fails, naming what it waited for (`what`, or the source of
 * `ok` when no `what` is given) and the last value read, so that a test never goes on from a
 * state it did not reach. The pauses between reads start at 20 ms and grow to 250 ms; a last read
 * is made at the deadline. The deadline is on the monotonic clock (performance.now()), which
 * moves at real speed under libfaketime too.
 */
export async function waitFor<T>(read: () => T | Promise<T>, ok: (value: T) => boolean, ms: number, what?: string): Promise<T> {
  const deadline = performance.now() + ms;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    const left = deadline - performance.now();
    if (left <= 0) throw new Error(`waited ${Math.round(ms)} ms for ${what ?? `(${ok.toString()})`}; the last value read: ${inspect(value, { depth: 4, breakLength: Infinity, maxArrayLength: 20, maxStringLength: 1_000 })}`);
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)));
    pause = Math.min(LONGEST_PAUSE_MS, Math.round(pause * 1.5));
  }
}
