import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A release whose worker has run against this database: when it first started and when it was
 * last seen polling. `admin workflows patches` reads it to know when code without a patch's
 * deprecation last ran (docs/design/testing.md, Changing a workflow safely).
 */
@Entity({ name: 'worker_releases' })
export class WorkerRelease {
  /** `<package version>+<commit>` (TEMPORAL_BUILD_ID when given), as Worker Versioning names it. */
  @PrimaryColumn({ name: 'build_id', type: 'text' })
  buildId: string;

  /** The package version of the release (semver). */
  @Column({ type: 'text' })
  version: string;

  @Column({ name: 'first_seen_at', type: 'timestamptz', default: () => 'now()' })
  firstSeenAt: Date;

  /** Refreshed every minute while one of its workers runs. */
  @Column({ name: 'last_seen_at', type: 'timestamptz', default: () => 'now()' })
  lastSeenAt: Date;
}
