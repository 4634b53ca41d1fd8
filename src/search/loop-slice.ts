/**
 * A long run of work on the search process's event loop, cut into turns of at most `ms`: between
 * two steps, `if (slice.spent) await slice.pause();` lets requests in once the turn has run `ms`.
 * Used wherever the index works through many rows or slots in one go (a sync's rows, new
 * vectors, a chunk for the build worker).
 */
import { setImmediate } from 'node:timers/promises';

export class LoopSlice {
  private started = performance.now();

  constructor(private readonly ms: number) {}

  /** Whether this turn has run its `ms`. */
  get spent(): boolean {
    return performance.now() - this.started >= this.ms;
  }

  /** Lets other work in, then starts a new turn. */
  async pause(): Promise<void> {
    await setImmediate();
    this.started = performance.now();
  }
}
