/**
 * Switching admission between Postgres and Redis safely: each store knows only the nonces it saw,
 * so an API process that starts with a store other than the one recorded in `admission_store`
 * starts a new crash epoch in its own store first (requests signed before now are refused once,
 * as after a crash) and records the switch. Every API process must use the same store: processes
 * with different stores running side by side would each admit a nonce once, which
 * AdmissionStoreHold prevents (docs/partners/signing.md).
 */
import { createHash } from 'node:crypto';
import type { Client } from 'pg';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import { dependencyUnavailable } from '../api/unavailable';
import { dedicatedClient } from '../db/dedicated-client';
import { AdmissionEpoch, AdmissionStore } from '../db/entities/admission';
import { Credential } from '../db/entities/credential';
import type { RedisAdmission } from './redis-admission';
import { ROW_LOCK } from '../db/row-lock';

export type AdmissionStoreName = AdmissionStore['store'];

/**
 * Records `store` (and which Redis) as the one deciding admission; returns whether it was a switch
 * that started a new epoch: from Postgres to Redis or back, or from one Redis to another.
 */
export async function recordAdmissionStore(dataSource: DataSource, store: AdmissionStoreName, redis?: RedisAdmission): Promise<boolean> {
  const storeId = store === 'redis' ? (redis?.storeId ?? null) : null;
  return dataSource.transaction(async (m) => {
    const row = await m.getRepository(AdmissionStore).createQueryBuilder('s').setLock(ROW_LOCK).getOne();
    if (row?.store === store && (row.storeId === storeId || row.storeId === null)) {
      // The same store (a row from before store ids names no Redis: it is taken as this one).
      if (row.storeId !== storeId) await m.getRepository(AdmissionStore).update({ singleton: true }, { storeId });
      return false;
    }
    // No credential yet (a new database): nothing can have been admitted, so nothing signed
    // earlier needs refusing. An empty Redis would otherwise set its epoch at the first admission
    // and refuse the requests signed in that same second.
    if (!(await m.getRepository(Credential).exists())) {
      if (store === 'redis') await redis?.markFresh();
      await m.getRepository(AdmissionStore).save({ singleton: true, store, storeId, switchedAt: new Date() });
      return false;
    }
    if (store === 'redis') {
      if (!redis) throw new Error('switching admission to Redis needs its connection');
      await redis.startEpoch();
    } else {
      await m.getRepository(AdmissionEpoch).createQueryBuilder().update().set({ startedAt: () => 'clock_timestamp()' }).execute();
    }
    await m.getRepository(AdmissionStore).save({ singleton: true, store, storeId, switchedAt: new Date() });
    return true;
  });
}

/** Advisory locks of the stores in use: one key per store identity (see AdmissionStoreHold). */
const STORE_LOCK_SPACE = 804_202;

/**
 * A store's identity for the lock: `postgres`, or `redis:` and the random id kept in that Redis
 * (not its address: two Redis servers at `localhost:6379` on two hosts are two stores).
 */
export function admissionStoreIdentity(redis: Pick<RedisAdmission, 'storeId'> | undefined): string {
  return redis ? `redis:${redis.storeId}` : 'postgres';
}

/** The lock key of an identity: 31 bits of its SHA-256 (an advisory lock's second int4, as pg_locks shows it). */
function lockKey(identity: string): number {
  return createHash('sha256').update(identity).digest().readUInt32BE(0) & 0x7fffffff;
}

/**
 * Every API process holds a shared advisory lock for its admission store on a connection of its
 * own, for as long as it runs; one starting with another store (Postgres or another Redis) finds
 * the other's lock held and refuses to start, so processes with different stores, each admitting
 * a nonce once, never serve side by side. Two starting at once with different stores both refuse.
 * Raw SQL: advisory locks and pg_locks, which TypeORM does not express.
 */
export class AdmissionStoreHold {
  private client?: Client;
  private closed = false;
  private retry?: NodeJS.Timeout;

  private constructor(
    private readonly connectionString: string,
    readonly identity: string,
    private readonly logger?: Pick<Logger, 'error' | 'warn' | 'info'>,
  ) {}

  static async take(dataSource: DataSource, identity: string, logger?: Pick<Logger, 'error' | 'warn' | 'info'>): Promise<AdmissionStoreHold> {
    const url = (dataSource.options as PostgresDataSourceOptions).url;
    if (!url) throw new Error('the admission store lock needs the data source to be configured by url');
    const hold = new AdmissionStoreHold(url, identity, logger);
    await hold.lock();
    return hold;
  }

  private async lock(): Promise<void> {
    const key = lockKey(this.identity);
    const client = await dedicatedClient({ connectionString: this.connectionString, keepAlive: true, connectionTimeoutMillis: 10_000 }, async (c) => {
      await c.query('SELECT pg_advisory_lock_shared($1, $2)', [STORE_LOCK_SPACE, key]);
      const { rows } = await c.query<{ others: number }>(
        `SELECT count(*)::int AS others FROM pg_locks
          WHERE locktype = 'advisory' AND classid = $1::oid AND objsubid = 2 AND objid <> $2::oid`,
        [STORE_LOCK_SPACE, key],
      );
      if (rows[0].others > 0) {
        throw new Error(
          `API processes using another admission store than ${this.identity} are running: stop every API process, then start them all with the same REDIS_URL (or none)`,
        );
      }
    });
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    client.once('end', () => this.lost(client));
  }

  /** The connection (and so the lock) was lost: taken again, or the conflict logged, every second. */
  private lost(client: Client): void {
    if (client !== this.client || this.closed) return;
    this.client = undefined;
    // Expected while Postgres restarts: a warning; failing to take it again is the error.
    this.logger?.warn({ identity: this.identity }, 'admission store lock lost: taking it again');
    const lostAt = Date.now();
    let warned = false;
    const again = () => {
      this.retry = undefined;
      if (this.closed) return;
      this.lock().then(
        () => this.logger?.info({ identity: this.identity }, 'admission store lock held again'),
        (err: unknown) => {
          // Postgres still restarting: one warning. Anything else, or an outage past a minute: an error each time.
          if (dependencyUnavailable(err) && Date.now() - lostAt < 60_000) {
            if (!warned) this.logger?.warn({ err, identity: this.identity }, 'admission store lock not taken again yet: Postgres is not back (retried every second)');
            warned = true;
          } else this.logger?.error({ err, identity: this.identity }, 'admission store lock not taken again');
          this.retry = setTimeout(again, 1_000);
          this.retry.unref();
        },
      );
    };
    again();
  }

  async release(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
