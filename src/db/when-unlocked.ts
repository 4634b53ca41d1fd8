/**
 * Waiting for a lock without holding a database connection: the attempt (a transaction) takes its
 * lock without waiting — a row locked `NOWAIT`, or `pg_try_advisory_xact_lock` — and when the lock
 * is taken it ends at once and is tried again a moment later. Waiting on the lock itself would
 * hold a pooled connection per waiter, so a burst of requests for one lock could hold them all.
 */
import { QueryFailedError } from 'typeorm';

/** What an attempt answers when its lock was taken (an advisory lock it tried). */
export const LOCK_TAKEN = Symbol('lock taken');

/** Postgres' lock_not_available: a NOWAIT lock that was taken. */
const LOCK_NOT_AVAILABLE = '55P03';

/** `attempt`'s answer once it got its lock; undefined when the lock stayed taken for `giveUpMs`. */
export async function whenUnlocked<T>(attempt: () => Promise<T | typeof LOCK_TAKEN>, options: { giveUpMs: number; everyMs: number }): Promise<T | undefined> {
  const deadline = Date.now() + options.giveUpMs;
  for (;;) {
    let answer: T | typeof LOCK_TAKEN;
    try {
      answer = await attempt();
    } catch (err) {
      if (!(err instanceof QueryFailedError && (err.driverError as { code?: string }).code === LOCK_NOT_AVAILABLE)) throw err;
      answer = LOCK_TAKEN;
    }
    if (answer !== LOCK_TAKEN) return answer;
    if (Date.now() >= deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, options.everyMs));
  }
}
