/**
 * The API process's ear on Postgres' change feed (change-feed migration): one connection that
 * LISTENs to the channels its caches need and hands each notification to their handlers.
 *
 * A cache may hold a row only while the feed is live: when the connection drops, every cache is
 * emptied and readers go to Postgres until the feed listens again (it reconnects every second),
 * because changes committed meanwhile were never heard. `generation` moves on every notification
 * and every loss or return of the connection, so a reader that started before either can tell
 * that what it read may already be stale and must not be cached (see `CachedReads`).
 */
import { Client, type ClientConfig, type Notification } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import type { Logger } from 'pino';

type Handler = (payload: string) => void;

export class ChangeFeed {
  private client?: Client;
  private readonly handlers = new Map<string, Handler[]>();
  private readonly resetHandlers: Array<() => void> = [];
  private reconnect?: NodeJS.Timeout;
  private closed = false;
  live = false;
  generation = 0;

  constructor(
    private readonly connection: ClientConfig,
    private readonly logger?: Pick<Logger, 'warn' | 'info'>,
    private readonly retryMs = 1_000,
  ) {}

  static forDataSource(dataSource: DataSource, logger?: Pick<Logger, 'warn' | 'info'>): ChangeFeed {
    const options = dataSource.options as PostgresDataSourceOptions;
    if (!options.url) throw new Error('the change feed needs the data source to be configured by url');
    return new ChangeFeed({ connectionString: options.url, connectionTimeoutMillis: 10_000 }, logger);
  }

  /** `handler` gets each notification's payload on `channel` (subscribe before start). */
  on(channel: string, handler: Handler): void {
    const list = this.handlers.get(channel) ?? [];
    list.push(handler);
    this.handlers.set(channel, list);
  }

  /** Called whenever the feed is lost or comes back: everything heard so far may be stale. */
  onReset(handler: () => void): void {
    this.resetHandlers.push(handler);
  }

  /** Listens; resolves once live, rejects if the first connection fails (later losses reconnect). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new Client(this.connection);
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (n: Notification) => this.heard(n));
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.reset();
    this.live = true;
  }

  private heard(n: Notification): void {
    this.generation++;
    for (const handler of this.handlers.get(n.channel) ?? []) handler(n.payload ?? '');
  }

  private reset(): void {
    this.generation++;
    for (const handler of this.resetHandlers) handler();
  }

  private lost(client: Client, err: Error): void {
    if (client !== this.client) return;
    this.client = undefined;
    this.live = false;
    this.reset();
    client.end().catch(() => undefined);
    if (this.closed) return;
    this.logger?.warn({ err }, 'change feed lost: caches bypassed until it listens again');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.reconnect || this.closed) return;
    this.reconnect = setTimeout(() => {
      this.reconnect = undefined;
      this.connect().then(
        () => this.logger?.info({}, 'change feed listening again'),
        () => this.scheduleReconnect(),
      );
    }, this.retryMs);
    this.reconnect.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.live = false;
    if (this.reconnect) clearTimeout(this.reconnect);
    const client = this.client;
    this.client = undefined;
    this.reset();
    await client?.end().catch(() => undefined);
  }
}

/**
 * Reads kept in memory while the change feed is live; `forget` drops one (its handlers call it),
 * `clear` all. A read that was in flight when the feed heard anything is returned but not kept.
 */
/** What CachedReads keeps its entries in (a Map, an LRUCache). */
export interface CacheStore<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): unknown;
  delete(key: K): unknown;
  clear(): void;
}

export class CachedReads<K, V> {
  constructor(
    private readonly feed: ChangeFeed,
    private readonly entries: CacheStore<K, V>,
  ) {
    feed.onReset(() => this.clear());
  }
  async get(key: K, read: () => Promise<V>): Promise<V> {
    if (this.feed.live) {
      const hit = this.entries.get(key);
      if (hit !== undefined) return hit;
    }
    const generation = this.feed.generation;
    const value = await read();
    if (this.feed.live && this.feed.generation === generation) this.entries.set(key, value);
    return value;
  }

  forget(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
