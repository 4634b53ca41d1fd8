/**
 * Click recording that never makes the buyer wait: a click is queued in memory and written in
 * batches (one multi-row upsert every 200 ms, or as soon as 500 are waiting), after the redirect
 * has been answered. A batch adds its clicks to the row of their link, visitor and day
 * (ReferralClick), so the table grows by at most one row per visitor, link and day. The cost is stated plainly: clicks queued in the last 200 ms before a
 * process dies uncleanly are lost (a clean stop flushes them).
 * A batch that finds the database down or restarting stays queued and is tried again every
 * second (should the connection die after the database committed a batch but before it answered,
 * that batch would count twice: click counts are statistics, never money, and an outage's
 * clicks are kept rather than lost). The queue has a cap (MAX_QUEUED_CLICKS): while the database cannot keep up (or is
 * down), clicks beyond it are dropped and counted (`dropped`), so a flood of `/r/` never grows the
 * process's memory without bound; the redirects go on.
 */
import type { DataSource } from 'typeorm';
import type { Logger } from 'pino';
import { dependencyUnavailable } from '../api/unavailable';
import { ReferralClick } from '../db/entities/referral';

/** One click as the `/r/` page saw it. */
export interface NewClick {
  linkId: string;
  partnerId: string;
  environment: ReferralClick['environment'];
  visitorHash: string;
  day: string;
  clickedAt: Date;
}

/** A batch's clicks folded into one row per link, visitor and day (an upsert touches each row once). */
function byVisitorDay(batch: NewClick[]): ReferralClick[] {
  const rows = new Map<string, ReferralClick>();
  for (const c of batch) {
    const key = `${c.linkId}|${c.visitorHash}|${c.day}`;
    const row = rows.get(key);
    if (!row) {
      rows.set(key, { linkId: c.linkId, partnerId: c.partnerId, environment: c.environment, visitorHash: c.visitorHash, day: c.day, clicks: 1, firstClickedAt: c.clickedAt, lastClickedAt: c.clickedAt });
      continue;
    }
    row.clicks++;
    if (c.clickedAt < row.firstClickedAt) row.firstClickedAt = c.clickedAt;
    if (c.clickedAt > row.lastClickedAt) row.lastClickedAt = c.clickedAt;
  }
  return [...rows.values()];
}

/** How soon a batch that found the database unreachable is tried again. */
const RETRY_MS = 1_000;

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
  /** The last batch found the database unreachable: its clicks wait in the queue. */
  private waitingForDatabase = false;

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
    // While the database is away, only the retry timer writes (once a second), however many wait.
    if (this.queue.length >= this.batchSize && !this.waitingForDatabase) void this.flush();
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
        const rows = byVisitorDay(batch);
        const column = <K extends keyof ReferralClick>(key: K) => rows.map((r) => r[key]);
        // Raw SQL: an upsert that adds to the stored count, which TypeORM's orUpdate (overwrite only) cannot express.
        await this.dataSource.query(
          `INSERT INTO referral_clicks (link_id, visitor_hash, day, partner_id, environment, clicks, first_clicked_at, last_clicked_at)
           SELECT * FROM unnest($1::uuid[], $2::text[], $3::date[], $4::uuid[], $5::text[], $6::int[], $7::timestamptz[], $8::timestamptz[])
           ON CONFLICT (link_id, visitor_hash, day) DO UPDATE SET clicks = referral_clicks.clicks + EXCLUDED.clicks,
             first_clicked_at = least(referral_clicks.first_clicked_at, EXCLUDED.first_clicked_at),
             last_clicked_at = greatest(referral_clicks.last_clicked_at, EXCLUDED.last_clicked_at)`,
          [column('linkId'), column('visitorHash'), column('day'), column('partnerId'), column('environment'), column('clicks'), column('firstClickedAt'), column('lastClickedAt')],
        );
        this.held -= batch.length;
        if (this.waitingForDatabase) this.logger?.info({ clicks: batch.length }, 'referral clicks stored again');
        this.waitingForDatabase = false;
      } catch (err) {
        if (dependencyUnavailable(err)) {
          // Postgres is down or restarting: the batch goes back in front of the queue and is tried
          // again in a second (still counted against the cap), rather than lost.
          if (!this.waitingForDatabase) this.logger?.warn({ err, clicks: batch.length }, 'referral clicks wait for the database (retried every second)');
          this.waitingForDatabase = true;
          this.queue = [...batch, ...this.queue];
          this.timer ??= setTimeout(() => void this.flush(), RETRY_MS).unref();
          return;
        }
        this.held -= batch.length;
        this.logger?.error({ err, clicks: batch.length }, 'could not store referral clicks');
      }
    })();
    await this.flushing;
  }
}
