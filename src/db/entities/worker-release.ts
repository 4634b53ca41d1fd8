import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A worker's code that has run against this database: its build, the workflow patches it knows
 * and those it deprecates, when it first started and when it was last seen running.
 * `admin workflows patches` reads it to know when code calling `patched(id)`, or code without the
 * patch, last ran (docs/design/testing.md, Changing a workflow safely). A build id reused for
 * other code (`dev-stack`, an image tag pushed again) is another row: the key holds the patches.
 */
@Entity({ name: 'worker_releases' })
export class WorkerRelease {
  /** `<build id> <patches>`: the build and what its workflow code says of each patch. */
  @PrimaryColumn({ type: 'text' })
  id: string;

  /** `<package version>+<commit>` (TEMPORAL_BUILD_ID when given), as Worker Versioning names it. */
  @Column({ name: 'build_id', type: 'text' })
  buildId: string;

  /** The package version of the release. */
  @Column({ type: 'text' })
  version: string;

  /** Every patch id its workflows call, with patched() or deprecatePatch() (workflows/patches.ts). */
  @Column({ type: 'text', array: true })
  patches: string[];

  /** The patch ids its workflows call deprecatePatch() for. */
  @Column({ name: 'deprecated_patches', type: 'text', array: true })
  deprecatedPatches: string[];

  @Column({ name: 'first_seen_at', type: 'timestamptz', default: () => 'now()' })
  firstSeenAt: Date;

  /** Refreshed every minute while one of its workers runs. */
  @Column({ name: 'last_seen_at', type: 'timestamptz', default: () => 'now()' })
  lastSeenAt: Date;
}
