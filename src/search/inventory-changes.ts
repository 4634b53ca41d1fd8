/**
 * How search follows the inventory, for both engines: every domain row carries the id of the
 * transaction that last wrote it (`changed_xid`, set by a trigger; search migration). A read
 * returns the rows changed at or above the previous read's horizon (the oldest transaction
 * still running then), so every change committed since is seen, whatever order transactions
 * commit in; the first read takes every name on the market. Names come in name order, a page
 * at a time.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import type { ChangeFeed } from '../db/change-feed';
import { LISTING_CHANNEL } from '../db/migrations/1795001400000-change-feed';

export interface InventoryRow {
  name: string;
  label: string;
  category: string;
  status: string;
  buy_now_price_cents: string;
  currency: string;
}

export const onMarket = (row: Pick<InventoryRow, 'status'>) => row.status === 'listed' || row.status === 'reserved';

/**
 * Follows the listing change feed (subscribed before the caller starts it) for an engine:
 * `heard(environments)` when names of those environments changed (each notification names its
 * names as `<environment>:<name>`), `heard()` when one names none in particular (`*`), when the
 * feed is lost or back, and every `pollMs` beside it (for what the feed does not name: a category
 * changed by an import). Returns a stop function.
 */
export function followListings(feed: ChangeFeed | undefined, heard: (environments?: ReadonlySet<string>) => void, pollMs: number): () => void {
  let following = true;
  feed?.on(LISTING_CHANNEL, (payload) => {
    if (!following) return;
    if (payload === '*') return heard();
    heard(new Set(payload.split('\n').map((name) => name.slice(0, name.indexOf(':')))));
  });
  feed?.onReset(() => following && heard());
  const timer = setInterval(() => following && heard(), pollMs);
  timer.unref();
  return () => {
    following = false;
    clearInterval(timer);
  };
}

/**
 * The inventory a page of `limit` rows at a time, in name order: every name on the market when
 * `since` is undefined, else the rows changed since that horizon (names that left the market
 * included). Each page carries the horizon where the next read starts (the first page's), and
 * whether it is the last.
 */
export async function* inventoryPages(dataSource: DataSource, environment: Environment, since: string | undefined, limit: number): AsyncGenerator<{ horizon: string; rows: InventoryRow[]; last: boolean }> {
  let after = '';
  let horizon: string | undefined;
  for (;;) {
    const page = await readInventoryPage(dataSource, environment, after, since, limit);
    horizon ??= page.horizon;
    const last = page.rows.length < limit;
    yield { horizon, rows: page.rows, last };
    if (last) return;
    after = page.rows[page.rows.length - 1].name;
  }
}

/** One page of rows after `after` (a name), and the horizon read with it. */
async function readInventoryPage(dataSource: DataSource, environment: Environment, after: string, since: string | undefined, limit: number): Promise<{ horizon: string; rows: InventoryRow[] }> {
  // Raw SQL: the horizon is pg_current_snapshot()'s xmin, read in the same statement as the page.
  // The page is its own ordered, limited subquery (LATERAL), so that Postgres walks the
  // (environment, name) index from `after` and stops at `limit`: as a plain LEFT JOIN on the
  // horizon's row it scanned the whole table and sorted every remaining name for each page (at
  // 1M names 0.9–1.8 s a page, on disk, ~50 s of a start's first read).
  const rows = (await dataSource.query(
    `SELECT h.horizon::text AS horizon, d.name, d.label, d.category, d.status, d.buy_now_price_cents, d.currency
     FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon) h
     LEFT JOIN LATERAL (
       SELECT d.name, d.label, d.category, d.status, d.buy_now_price_cents, d.currency FROM domains d
       WHERE d.environment = $1 AND d.name > $2 AND
         ${since === undefined ? `d.status IN ('listed', 'reserved')` : `d.changed_xid >= $3::xid8`}
       ORDER BY d.name LIMIT ${Number(limit)}
     ) d ON true
     ORDER BY d.name`,
    since === undefined ? [environment, after] : [environment, after, since],
  )) as Array<InventoryRow & { horizon: string; name: string | null }>;
  return { horizon: rows[0].horizon, rows: rows.filter((r): r is InventoryRow & { horizon: string } => r.name !== null) };
}

/**
 * Runs an engine's sync one at a time, for both engines: a call settles with a run that started
 * after it (so with every change committed before the call), and the calls that come while one
 * runs share the next, whether the one running succeeds or fails.
 */
export class SyncRunner {
  private running: Promise<void> | undefined;
  private next: Promise<void> | undefined;

  constructor(private readonly sync: () => Promise<void>) {}

  /** The run under way, if any. */
  get current(): Promise<void> | undefined {
    return this.running;
  }

  run(): Promise<void> {
    if (!this.running) {
      this.running = this.sync().finally(() => (this.running = undefined));
      return this.running;
    }
    this.next ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.next = undefined;
        return this.run();
      });
    return this.next;
  }

  /** Settles when no run is under way or asked for (whatever its outcome). */
  async settled(): Promise<void> {
    // The next run starts a few microtasks after the one running ends: waited for too.
    while (this.running || this.next) await (this.next ?? this.running)!.catch(() => undefined);
  }
}
