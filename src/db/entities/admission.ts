import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The state of request admission (CONTRACT §1–§2), written by the `admit_request` function in one
 * statement per signed request (src/db/migrations/1795001000000-hot-path.ts); UNLOGGED tables.
 */

/** A nonce seen for a key id, kept while its timestamp could still pass the ±300 s skew check. */
@Entity({ name: 'request_nonces' })
export class RequestNonce {
  @PrimaryColumn({ name: 'key_id', type: 'text' })
  keyId: string;

  @PrimaryColumn({ type: 'uuid' })
  nonce: string;

  @Column({ name: 'seen_at', type: 'timestamptz' })
  seenAt: Date;
}

/** A credential's rate limit as a GCRA theoretical arrival time. */
@Entity({ name: 'rate_limit_buckets' })
export class RateLimitBucket {
  @PrimaryColumn({ name: 'key_id', type: 'text' })
  keyId: string;

  @Column({ type: 'timestamptz' })
  tat: Date;
}

/** When admission last started from empty unlogged tables (after a crash); requests signed before it are refused. */
@Entity({ name: 'admission_epoch' })
export class AdmissionEpoch {
  @PrimaryColumn({ type: 'boolean', default: true })
  singleton: boolean;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt: Date;
}

/**
 * Which store decides admission (Postgres, or Redis when REDIS_URL is set), as the last API process
 * to start found it. A process that finds another store recorded starts a new epoch in its own
 * (src/auth/admission-store.ts): nonces the other store saw are unknown to it.
 */
@Entity({ name: 'admission_store' })
export class AdmissionStore {
  @PrimaryColumn({ type: 'boolean', default: true })
  singleton: boolean;

  @Column({ type: 'text' })
  store: 'postgres' | 'redis';

  /** Which Redis: its random id (`<prefix>store-id`, src/auth/redis-admission.ts); null for Postgres, or when recorded before ids. */
  @Column({ name: 'store_id', type: 'text', nullable: true })
  storeId: string | null;

  @Column({ name: 'switched_at', type: 'timestamptz' })
  switchedAt: Date;
}
