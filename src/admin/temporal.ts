/** The admin CLI's Temporal client: TEMPORAL_ADDRESS, else the dev stack's server on this machine. */
import { serviceClientInterceptors } from '../temporal/request-context';
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { temporalConnectionOptions } from '../temporal/connect-options';
import type { DataSource } from 'typeorm';
import { PATCHES, type PatchEntry } from '../../workflows/patches';
import { deprecationShipped } from '../temporal/releases';

export async function withTemporal<T>(config: Config, work: (client: Client) => Promise<T>): Promise<T> {
  const connection = await Connection.connect(temporalConnectionOptions(config.temporal.address ?? `127.0.0.1:${config.temporal.devServerPort}`));
  try {
    return await work(new Client({ connection, namespace: config.temporal.namespace, interceptors: serviceClientInterceptors() }));
  } finally {
    await connection.close();
  }
}

export interface PatchUse {
  workflow_type: string;
  patch_id: string;
  /** Open runs of the type. */
  open_runs: number;
  /** Open runs that recorded the patch's marker (TemporalChangeVersion holds its id). */
  open_runs_patched: number;
  /** Open runs without it: started before the patch shipped, or not yet at the patched() call. */
  open_runs_before_patch: number;
  /**
   * Runs open or closed within retention without the marker: replaying one (a query, the UI, a
   * reset) needs the old branch, so `patched()` may become `deprecatePatch()` only at 0.
   */
  runs_without_patch: number;
  /** The release (package version) whose code calls deprecatePatch() instead of patched(), or null. */
  deprecated_in: string | null;
  /** Whether a worker of that release, or a later one, has run here. */
  deprecation_shipped: boolean;
  /**
   * Runs open or closed within retention started before a release still calling patched() was
   * last seen running: they hold the marker deprecatePatch() must still meet on replay. Null until
   * the deprecation has shipped.
   */
  runs_before_deprecation: number | null;
  /** Whether the patch may be removed from the code now (deprecated, shipped, and runs_before_deprecation is 0). */
  retirable: boolean;
  /** What the operator may do with the patch now, in words. */
  verdict: string;
}

/** Visibility's time literal. */
const rfc3339 = (at: Date) => at.toISOString();

/**
 * Per workflow type and patch id, from visibility (counts, so runs closed within retention count
 * too) and the record of releases (worker_releases): the runs that still need the old branch,
 * and the runs that still hold the non-deprecated marker. A patch goes in three steps, each in a
 * release of its own: `patched()`; `deprecatePatch()` once no run within retention lacks the
 * marker (`deprecatedIn` set in workflows/patches.ts); removed once no run within retention
 * started before code calling `patched()` last ran. Removing it earlier fails the replay of such
 * runs ("non-deprecated patch marker … no corresponding change command").
 */
export async function patchUse(client: Client, dataSource: DataSource, patches: readonly PatchEntry[] = Object.values(PATCHES)): Promise<PatchUse[]> {
  const uses: PatchUse[] = [];
  for (const { workflowType, patchId, deprecatedIn } of patches) {
    let openRuns = 0;
    let patched = 0;
    for await (const run of client.workflow.list({ query: `WorkflowType = '${workflowType}' AND ExecutionStatus = 'Running'` })) {
      openRuns++;
      const versions = run.searchAttributes.TemporalChangeVersion;
      if (Array.isArray(versions) && (versions as unknown[]).includes(patchId)) patched++;
    }
    const all = (await client.workflow.count(`WorkflowType = '${workflowType}'`)).count;
    const marked = (await client.workflow.count(`WorkflowType = '${workflowType}' AND TemporalChangeVersion = '${patchId}'`)).count;
    const withoutPatch = Math.max(0, all - marked);
    let shipped = false;
    let beforeDeprecation: number | null = null;
    if (deprecatedIn) {
      const release = await deprecationShipped(dataSource, deprecatedIn);
      shipped = release.shipped;
      if (shipped) {
        beforeDeprecation = release.olderCodeLastSeen
          ? (await client.workflow.count(`WorkflowType = '${workflowType}' AND StartTime < '${rfc3339(release.olderCodeLastSeen)}'`)).count
          : 0;
      }
    }
    const retirable = shipped && beforeDeprecation === 0;
    const verdict = !deprecatedIn
      ? withoutPatch === 0
        ? 'may be deprecated: replace patched() with deprecatePatch() in a release, and set deprecatedIn in workflows/patches.ts'
        : `keep patched(): ${withoutPatch} run(s) within retention have not taken it`
      : !shipped
        ? `keep deprecatePatch(): release ${deprecatedIn} has not run here yet`
        : retirable
          ? 'may be removed: no run within retention started before the deprecation'
          : `keep deprecatePatch(): ${beforeDeprecation} run(s) within retention started before code calling patched() last ran`;
    uses.push({
      workflow_type: workflowType,
      patch_id: patchId,
      open_runs: openRuns,
      open_runs_patched: patched,
      open_runs_before_patch: openRuns - patched,
      runs_without_patch: withoutPatch,
      deprecated_in: deprecatedIn ?? null,
      deprecation_shipped: shipped,
      runs_before_deprecation: beforeDeprecation,
      retirable,
      verdict,
    });
  }
  return uses;
}
