/**
 * The API process's ear on Postgres' change feed (change-feed migration): one connection that
 * LISTENs to the channels its caches need and hands each notification to their handlers.
 *
 * A cache may hold a row only while the feed is live: when the connection drops, every cache is
 * emptied and readers go to Postgres until the feed listens again (it reconnects every second),
 * because changes committed meanwhile were never heard. A connection can also die without a word
 * (an idle timeout in the network, a pooler such as PgBouncer in transaction mode that never
 * delivers notifications): so every 5 s the feed sends itself a notification through another
 * connection, and one not heard back within 10 s of being sent (20 s when it could not be sent)
 * counts as a lost connection: found within 15–25 s. The connection also has TCP keep-alive.
 *
 * `generation` moves on every notification and every loss or return of the connection, so a
 * reader that started before either can tell that what it read may already be stale and must not
 * be cached (see `CachedReads`).
 */
import { randomBytes } from 'node:crypto';
import type { Client, ClientConfig, Notification } from 'pg';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import { dedicatedClient } from './dedicated-client';

type Handler = (payload: string) => void;

/** The feed's own heartbeat channel (see the file comment). */
export const FEED_PING_CHANNEL = 'change_feed_ping';

export class ChangeFeed {
  private client?: Client;
  private readonly handlers = new Map<string, Handler[]>();
  private readonly resetHandlers: Array<() => void> = [];
  private reconnect?: NodeJS.Timeout;
  private heartbeat?: NodeJS.Timeout;
  /** The heartbeat sent and not heard back yet, and when it counts as lost. */
  private awaited?: { token: string; sentAt: number; deadline: number };
  /** The last heartbeat's round trip: how late a change reaches this process's caches. */
  private roundTripMs?: number;
  private readonly pingPrefix = `${process.pid}-${randomBytes(6).toString('hex')}-`;
  private pings = 0;
  private closed = false;
  live = false;
  generation = 0;

  /** The last heartbeat's round trip in ms while the feed is live (metrics); undefined while it is down. */
  get lagMs(): number | undefined {
    return this.live ? this.roundTripMs : undefined;
  }

  constructor(
    private readonly connection: ClientConfig,
    /** Sends a notification on FEED_PING_CHANNEL through a connection other than the feed's. */
    private readonly ping: (token: string) => Promise<unknown>,
    private readonly logger?: Pick<Logger, 'warn' | 'info'>,
    private readonly timing = { retryMs: 1_000, heartbeatMs: 5_000, heartbeatTimeoutMs: 10_000 },
  ) {}

  static forDataSource(dataSource: DataSource, logger?: Pick<Logger, 'warn' | 'info'>, timing?: ChangeFeed['timing']): ChangeFeed {
    const options = dataSource.options as PostgresDataSourceOptions;
    if (!options.url) throw new Error('the change feed needs the data source to be configured by url');
    return new ChangeFeed(
      { connectionString: options.url, connectionTimeoutMillis: 10_000, keepAlive: true, keepAliveInitialDelayMillis: 10_000 },
      // Raw SQL: NOTIFY, which TypeORM does not express.
      (token) => dataSource.query('SELECT pg_notify($1, $2)', [FEED_PING_CHANNEL, token]),
      logger,
      timing,
    );
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
    const client = await dedicatedClient(
      this.connection,
      async (c) => {
        c.on('end', () => this.lost(c, new Error('connection ended')));
        c.on('notification', (n: Notification) => this.heard(n));
        for (const channel of [...this.handlers.keys(), FEED_PING_CHANNEL]) await c.query(`LISTEN ${channel}`);
      },
      (c, err) => this.lost(c, err),
    );
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.reset();
    this.live = true;
    this.awaited = undefined;
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => this.beat(), this.timing.heartbeatMs);
      this.heartbeat.unref();
    }
  }

  /** Sends the next heartbeat, or counts the connection lost when the last one was not heard in time. */
  private beat(): void {
    const client = this.client;
    if (!client || !this.live) return;
    if (this.awaited) {
      if (Date.now() > this.awaited.deadline) this.lost(client, new Error(`no notification heard for ${this.timing.heartbeatTimeoutMs} ms`));
      return;
    }
    const token = this.pingPrefix + ++this.pings;
    // Counted from when it was sent: a busy pool (up to 10 s for a connection) is not a dead feed.
    // Not sent at all (Postgres unreachable): twice the time, then the feed reconnects, or fails to.
    const awaited = (this.awaited = { token, sentAt: Date.now(), deadline: Date.now() + 2 * this.timing.heartbeatTimeoutMs });
    this.ping(token).then(
      () => {
        if (this.awaited === awaited) awaited.deadline = Date.now() + this.timing.heartbeatTimeoutMs;
      },
      () => undefined,
    );
  }

  private heard(n: Notification): void {
    if (n.channel === FEED_PING_CHANNEL) {
      const awaited = this.awaited;
      if (awaited && n.payload === awaited.token) {
        this.roundTripMs = Date.now() - awaited.sentAt;
        this.awaited = undefined;
      }
      return;
    }
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
    this.awaited = undefined;
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
    }, this.timing.retryMs);
    this.reconnect.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.live = false;
    if (this.reconnect) clearTimeout(this.reconnect);
    if (this.heartbeat) clearInterval(this.heartbeat);
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
  /** The value held for `key`, if the feed is live and one is held. */
  peek(key: K): V | undefined {
    return this.feed.live ? this.entries.get(key) : undefined;
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
