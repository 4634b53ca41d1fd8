/**
 * Click recording that never makes the buyer wait: a click is queued in memory and written in
 * batches (one multi-row insert every 200 ms, or as soon as 500 are waiting), after the redirect
 * has been answered. The cost is stated plainly: clicks queued in the last 200 ms before a
 * process dies uncleanly are lost (a clean stop flushes them). A click is never written twice.
 */
import type { DataSource } from 'typeorm';
import type { Logger } from 'pino';
import { ReferralClick } from '../db/entities/referral';

export type NewClick = Omit<ReferralClick, 'id'>;

export class ClickRecorder {
  private queue: NewClick[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly dataSource: DataSource,
    private readonly logger?: Logger,
    private readonly batchMs = 200,
    private readonly batchSize = 500,
  ) {}

  record(click: NewClick): void {
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
      }
    })();
    await this.flushing;
  }
}
