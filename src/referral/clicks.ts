/**
 * Click recording that never makes the buyer wait: a click is queued in memory and written in
 * batches (one multi-row insert every 200 ms, or as soon as 500 are waiting), after the redirect
 * has been answered. The cost is stated plainly: clicks queued in the last 200 ms before a
 * process dies uncleanly are lost (a clean stop flushes them). A click is never written twice.
 * The queue has a cap (MAX_QUEUED_CLICKS): while the database cannot keep up (or is down), clicks
 * beyond it are dropped and counted (`dropped`), so a flood of `/r/` never grows the process's
 * memory without bound; the redirects go on.
 */
import type { DataSource } from 'typeorm';
import type { Logger } from 'pino';
import { ReferralClick } from '../db/entities/referral';

export type NewClick = Omit<ReferralClick, 'id'>;

/** Clicks a process holds waiting for the database at most. */
export const MAX_QUEUED_CLICKS = 10_000;

export class ClickRecorder {
  private queue: NewClick[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  /** Clicks dropped because the queue was full. */
  dropped = 0;
  /** Clicks held in memory: queued, or in a batch being written. */
  private held = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly logger?: Logger,
    private readonly batchMs = 200,
    private readonly batchSize = 500,
    private readonly maxQueued = MAX_QUEUED_CLICKS,
  ) {}

  record(click: NewClick): void {
    if (this.held >= this.maxQueued) {
      if (this.dropped++ % 1000 === 0) this.logger?.warn({ dropped: this.dropped }, 'referral clicks dropped: the queue is full (the database is not keeping up)');
      return;
    }
    this.held++;
    this.queue.push(click);
    if (this.queue.length >= this.batchSize) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.batchMs).unref();
  }

  /** Writes what is queued; resolves once everything queued before the call is stored. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.queue;
    this.queue = [];
    const previous = this.flushing;
    this.flushing = (async () => {
      await previous;
      if (!batch.length) return;
      try {
        await this.dataSource.getRepository(ReferralClick).insert(batch);
      } catch (err) {
        this.logger?.error({ err, clicks: batch.length }, 'could not store referral clicks');
      } finally {
        this.held -= batch.length;
      }
    })();
    await this.flushing;
  }
}
