/**
 * Which workers' code has run against this database, and when (worker_releases): the record that
 * tells, for each workflow patch, when code without it last ran (so `patched()` may become
 * `deprecatePatch()` only for runs started after) and when code still calling `patched()` last ran
 * (so `deprecatePatch()` may be removed only for runs started after). `admin workflows patches`.
 */
import type { DataSource } from 'typeorm';
import { WorkerRelease } from '../db/entities/worker-release';
import { PATCHES, type PatchEntry } from '../../workflows/patches';

/** How often a running worker refreshes its record's last_seen_at. */
export const RELEASE_SEEN_EVERY_MS = 60_000;

export interface WorkerCode {
  buildId: string;
  version: string;
  /** Every patch id its workflows call. */
  patches: string[];
  /** The ids its workflows call deprecatePatch() for. */
  deprecatedPatches: string[];
}

/** This build's code, as workflows/patches.ts describes it. */
export function workerCode(buildId: string, version: string, patches: readonly PatchEntry[] = Object.values(PATCHES)): WorkerCode {
  return {
    buildId,
    version,
    patches: [...new Set(patches.map((p) => p.patchId))].sort(),
    deprecatedPatches: [...new Set(patches.filter((p) => p.deprecatedIn).map((p) => p.patchId))].sort(),
  };
}

/** The worker's code is running now: recorded the first time, its last_seen_at refreshed after. */
export async function recordRelease(dataSource: DataSource, code: WorkerCode): Promise<void> {
  const id = `${code.buildId} [${code.patches.map((p) => (code.deprecatedPatches.includes(p) ? `~${p}` : p)).join(' ')}]`;
  await dataSource
    .getRepository(WorkerRelease)
    .createQueryBuilder()
    .insert()
    .values({ id, buildId: code.buildId, version: code.version, patches: code.patches, deprecatedPatches: code.deprecatedPatches })
    .orUpdate(['last_seen_at'], ['id'])
    .execute();
}

/** Refreshes the record every minute until stopped; a failure is told and retried at the next tick. */
export function keepReleaseSeen(dataSource: DataSource, code: WorkerCode, onError: (err: unknown) => void): () => void {
  const timer = setInterval(() => void recordRelease(dataSource, code).catch(onError), RELEASE_SEEN_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}

export interface PatchBoundaries {
  /** Runs started before this may have run code without the patch (or code from before the record began); null: none. */
  withoutPatchUntil: Date | null;
  /** Runs started before this may have run code calling patched() (or code from before the record began). */
  patchedCallUntil: Date | null;
  /** Whether code that deprecates the patch has run here. */
  deprecationShipped: boolean;
  /** Whether any code is on record (none: every run counts as of unknown code). */
  recorded: boolean;
}

/**
 * The times before which a run may hold each branch of a patch. Each record's last_seen_at counts
 * one refresh later (a worker stopped without a last word ran up to then); runs older than the
 * first record are of unknown code, so they count on both sides.
 */
export async function patchBoundaries(dataSource: DataSource, patchId: string): Promise<PatchBoundaries> {
  const records = await dataSource.getRepository(WorkerRelease).find();
  const since = records.length ? new Date(Math.min(...records.map((r) => r.firstSeenAt.getTime()))) : null;
  const lastSeen = (of: WorkerRelease[]) =>
    of.length ? new Date(Math.max(...of.map((r) => r.lastSeenAt.getTime())) + RELEASE_SEEN_EVERY_MS) : null;
  const later = (a: Date | null, b: Date | null) => (a && b ? (a > b ? a : b) : (a ?? b));
  const withoutPatchUntil = later(lastSeen(records.filter((r) => !r.patches.includes(patchId))), since);
  return {
    withoutPatchUntil,
    // Code without the patch counts here too: its runs hold no marker at all.
    patchedCallUntil: later(lastSeen(records.filter((r) => r.patches.includes(patchId) && !r.deprecatedPatches.includes(patchId))), withoutPatchUntil),
    deprecationShipped: records.some((r) => r.deprecatedPatches.includes(patchId)),
    recorded: records.length > 0,
  };
}
