/**
 * Availability and pricing answered from memory (with Redis admission; bench/RESULTS.md): each
 * API process keeps a mirror of every environment's listings, name → state and prices, and
 * Postgres' change feed (the change-feed migration's `listing_changes`) tells it what changed.
 * Partners ask about names their users type, most of them in no inventory, so the mirror is
 * complete: a name it does not hold is answered "not listed" without asking Postgres.
 *
 * - A notified name is marked unsure and read from Postgres when next asked, then held again
 *   unless another change was heard meanwhile. A statement that changed more than 100 names (an
 *   import) notifies `*`, and the environment's mirror is loaded again.
 * - While the feed is down or a mirror is loading, answers come from Postgres; a lost feed drops
 *   every mirror, since changes made meanwhile were never heard.
 * - A change is answered once its notification arrives, which Postgres sends at commit (well under
 *   a millisecond on one host). Nothing that sells a name relies on this answer: quotes and orders
 *   decide on the row under its lock.
 * - An environment with more than `maxNames` names (default 200,000, about 40 MB) is not mirrored:
 *   its answers come from Postgres, one read per request.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import type { ChangeFeed } from '../db/change-feed';
import { Domain } from '../db/entities/domain';
import { LISTING_CHANNEL } from '../db/migrations/1795001400000-change-feed';
import { findListing, listingFromRow, normaliseDomainName, type Listing } from './inventory';

/** Where availability and pricing read a listing. */
export interface ListingReader {
  find(environment: Environment, name: string): Promise<Listing | undefined>;
}

/** Straight from Postgres, every time. */
export function listingsFromDatabase(dataSource: DataSource): ListingReader {
  return { find: (environment, name) => findListing(dataSource, environment, name) };
}

const ENVIRONMENTS: readonly Environment[] = ['sandbox', 'live'];

interface Mirror {
  listings: Map<string, Listing>;
  /** Names changed since they were loaded: read from Postgres when asked. */
  unsure: Set<string>;
}

export class ListingCache implements ListingReader {
  private readonly mirrors = new Map<Environment, Mirror>();
  /** Loads in progress, by environment. */
  private readonly loading = new Map<Environment, Promise<void>>();
  /** Names heard while an environment loads ('*': load again): unsure once it is installed. */
  private readonly heardWhileLoading = new Map<Environment, Set<string> | '*'>();
  /** Environments found too large to mirror (until the next reset). */
  private readonly tooLarge = new Set<Environment>();
  /** Moves on every change heard and every reset, so a read that overlapped one is not kept. */
  private version = 0;
  /** Reads and loads served from Postgres, since start (tests, benchmarks). */
  readonly reads = { database: 0, loads: 0 };

  constructor(
    private readonly dataSource: DataSource,
    private readonly feed: ChangeFeed,
    private readonly maxNames = 200_000,
    private readonly onLoadFailed?: (err: unknown) => void,
  ) {
    feed.on(LISTING_CHANNEL, (payload) => this.heard(payload));
    feed.onReset(() => this.reset());
  }

  /** Loads the mirrors now (else on first use); resolves when done or not possible (feed down). */
  async warm(): Promise<void> {
    await Promise.all(ENVIRONMENTS.map((environment) => this.load(environment)));
  }

  async find(environment: Environment, name: string): Promise<Listing | undefined> {
    const normalised = normaliseDomainName(name);
    const mirror = this.feed.live ? this.mirrors.get(environment) : undefined;
    if (mirror && !mirror.unsure.has(normalised)) return mirror.listings.get(normalised);
    if (!mirror && this.feed.live) void this.load(environment);
    const version = this.version;
    this.reads.database++;
    const listing = await findListing(this.dataSource, environment, normalised);
    // Held again only if nothing was heard meanwhile (the mirror is still the one read for).
    if (mirror && this.version === version && this.mirrors.get(environment) === mirror) {
      mirror.unsure.delete(normalised);
      if (listing) mirror.listings.set(normalised, listing);
      else mirror.listings.delete(normalised);
      // Grown past its bound by names added since it was loaded: no longer mirrored.
      if (mirror.listings.size > this.maxNames) {
        this.mirrors.delete(environment);
        this.tooLarge.add(environment);
      }
    }
    return listing;
  }

  private heard(payload: string): void {
    this.version++;
    if (payload === '*') {
      // An import: every environment is loaded again (the payload does not say which), and any
      // load in progress starts over.
      this.mirrors.clear();
      this.tooLarge.clear();
      for (const environment of this.heardWhileLoading.keys()) this.heardWhileLoading.set(environment, '*');
      return;
    }
    for (const line of payload.split('\n')) {
      const colon = line.indexOf(':');
      const environment = line.slice(0, colon) as Environment;
      const name = line.slice(colon + 1);
      this.mirrors.get(environment)?.unsure.add(name);
      const loading = this.heardWhileLoading.get(environment);
      if (loading && loading !== '*') loading.add(name);
    }
  }

  private reset(): void {
    this.version++;
    this.mirrors.clear();
    this.tooLarge.clear();
    for (const environment of this.heardWhileLoading.keys()) this.heardWhileLoading.set(environment, '*');
  }

  private load(environment: Environment): Promise<void> {
    if (this.mirrors.has(environment) || this.tooLarge.has(environment) || !this.feed.live) return Promise.resolve();
    let pending = this.loading.get(environment);
    if (!pending) {
      // A load that fails (a row it cannot read) leaves the environment unmirrored: answers come
      // from Postgres, and the next request tries again.
      pending = this.loadOnce(environment)
        .catch((err: unknown) => this.onLoadFailed?.(err))
        .finally(() => {
          this.loading.delete(environment);
          this.heardWhileLoading.delete(environment);
        });
      this.loading.set(environment, pending);
    }
    return pending;
  }

  private async loadOnce(environment: Environment): Promise<void> {
    for (let attempt = 0; attempt < 3 && this.feed.live; attempt++) {
      const heard = new Set<string>();
      this.heardWhileLoading.set(environment, heard);
      this.reads.loads++;
      const rows = await this.dataSource
        .getRepository(Domain)
        .createQueryBuilder('d')
        .select(['d.name AS name', 'd.status AS status', 'd.buy_now_price_cents AS buy_now_price_cents', 'd.floor_price_cents AS floor_price_cents', 'd.currency AS currency'])
        .where('d.environment = :environment', { environment })
        .limit(this.maxNames + 1)
        .getRawMany<Record<string, unknown>>()
        .catch(() => undefined); // Postgres unreachable: the requests read it themselves meanwhile
      const during = this.heardWhileLoading.get(environment);
      this.heardWhileLoading.delete(environment);
      if (!rows || !this.feed.live) return;
      if (rows.length > this.maxNames) {
        this.tooLarge.add(environment);
        return;
      }
      // The feed was lost or an import was heard while loading: load again.
      if (during !== heard) continue;
      const listings = new Map<string, Listing>();
      for (const row of rows) listings.set(String(row.name), listingFromRow(row));
      // Changes heard while loading may or may not be in the rows read: unsure until read again.
      this.mirrors.set(environment, { listings, unsure: heard });
      return;
    }
  }
}
