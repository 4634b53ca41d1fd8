/**
 * Which releases' workers have run against this database, and when (worker_releases): the record
 * that tells when code still calling `patched(id)` last ran, so that `admin workflows patches`
 * can say when the `deprecatePatch(id)` that followed may be removed.
 */
import semver from 'semver';
import type { DataSource } from 'typeorm';
import { WorkerRelease } from '../db/entities/worker-release';

/** How often a running worker refreshes its release's last_seen_at. */
export const RELEASE_SEEN_EVERY_MS = 60_000;

/** The worker's release is running now: recorded the first time, its last_seen_at refreshed after. */
export async function recordRelease(dataSource: DataSource, release: { buildId: string; version: string }): Promise<void> {
  await dataSource
    .getRepository(WorkerRelease)
    .createQueryBuilder()
    .insert()
    .values({ buildId: release.buildId, version: release.version })
    .orUpdate(['last_seen_at'], ['build_id'])
    .execute();
}

/** Refreshes the release's record every minute until stopped (a failure is retried at the next tick). */
export function keepReleaseSeen(dataSource: DataSource, release: { buildId: string; version: string }, onError: (err: unknown) => void): () => void {
  const timer = setInterval(() => void recordRelease(dataSource, release).catch(onError), RELEASE_SEEN_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}

export interface DeprecationShipped {
  /** Whether a release at or after `version` has run here. */
  shipped: boolean;
  /** The last time a worker of an earlier release (still calling patched()) was seen running; null when none ever ran here. */
  olderCodeLastSeen: Date | null;
}

/** Whether the release that deprecated a patch has run here, and when code before it last ran. */
export async function deprecationShipped(dataSource: DataSource, version: string): Promise<DeprecationShipped> {
  const releases = await dataSource.getRepository(WorkerRelease).find();
  let shipped = false;
  let olderCodeLastSeen: Date | null = null;
  for (const r of releases) {
    // A build id not from a release (a dev stack's) is neither before nor after.
    if (!semver.valid(r.version)) continue;
    if (semver.gte(r.version, version)) shipped = true;
    else if (!olderCodeLastSeen || r.lastSeenAt > olderCodeLastSeen) olderCodeLastSeen = r.lastSeenAt;
  }
  // It may have run up to one refresh past its last record (stopped without a last word).
  if (olderCodeLastSeen) olderCodeLastSeen = new Date(olderCodeLastSeen.getTime() + RELEASE_SEEN_EVERY_MS);
  return { shipped, olderCodeLastSeen };
}
