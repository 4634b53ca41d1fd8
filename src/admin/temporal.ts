/** The admin CLI's Temporal client: TEMPORAL_ADDRESS, else the dev stack's server on this machine. */
import { serviceClientInterceptors } from '../temporal/request-context';
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { temporalConnectionOptions } from '../temporal/connect-options';
import type { DataSource } from 'typeorm';
import { PATCHES, type PatchEntry } from '../../workflows/patches';
import { patchBoundaries } from '../temporal/releases';

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
  /** Open runs without it: started before the patch shipped, or not (yet) at the patched() call. */
  open_runs_before_patch: number;
  /**
   * Runs, open or closed within retention, started before code without the patch (or code from
   * before worker_releases began) was last seen: one may need the old branch on replay (a query,
   * the UI, a reset), so `patched()` may become `deprecatePatch()` only at 0.
   */
  runs_before_patch: number;
  /** The release that deprecates it (workflows/patches.ts), or null while it is patched(). */
  deprecated_in: string | null;
  /** Whether a worker whose code deprecates it has run here. */
  deprecation_shipped: boolean;
  /**
   * Runs, open or closed within retention, started before code calling patched() was last seen:
   * they may hold the non-deprecated marker that deprecatePatch() must still meet on replay. Null
   * until the deprecation has shipped.
   */
  runs_before_deprecation: number | null;
  /** Whether the patch may be removed from the code now (deprecated, shipped, and runs_before_deprecation is 0). */
  retirable: boolean;
  /** What the operator may do with the patch now, in words. */
  verdict: string;
}

/** Runs of the type started before `until` (every run, when nothing is on record), open or closed within retention. */
async function runsBefore(client: Client, workflowType: string, until: Date | null, recorded: boolean): Promise<number> {
  const query = `WorkflowType = '${workflowType}'`;
  if (!recorded) return (await client.workflow.count(query)).count;
  if (!until) return 0;
  return (await client.workflow.count(`${query} AND StartTime < '${until.toISOString()}'`)).count;
}

/**
 * Per workflow type and patch id, from visibility (counts, so runs closed within retention count
 * too) and the record of the workers' code (worker_releases). A patch goes in three steps, each in
 * a release of its own: `patched()`; `deprecatePatch()` once no run within retention started
 * before code without the patch last ran (`deprecatedIn` set in workflows/patches.ts); removed once
 * no run within retention started before code calling `patched()` last ran. Removing it earlier
 * fails the replay of such runs ("non-deprecated patch marker … no corresponding change command").
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
    const bounds = await patchBoundaries(dataSource, patchId);
    const beforePatch = await runsBefore(client, workflowType, bounds.withoutPatchUntil, bounds.recorded);
    const beforeDeprecation = deprecatedIn && bounds.deprecationShipped ? await runsBefore(client, workflowType, bounds.patchedCallUntil, bounds.recorded) : null;
    const retirable = beforeDeprecation === 0;
    const verdict = !deprecatedIn
      ? beforePatch === 0
        ? 'may be deprecated: replace patched() with deprecatePatch() in a release, and set deprecatedIn in workflows/patches.ts'
        : `keep patched(): ${beforePatch} run(s) within retention started before code without it last ran`
      : !bounds.deprecationShipped
        ? `keep deprecatePatch(): no worker whose code deprecates it (${deprecatedIn}) has run here yet`
        : retirable
          ? 'may be removed: no run within retention started before code calling patched() last ran'
          : `keep deprecatePatch(): ${beforeDeprecation} run(s) within retention started before code calling patched() last ran`;
    uses.push({
      workflow_type: workflowType,
      patch_id: patchId,
      open_runs: openRuns,
      open_runs_patched: patched,
      open_runs_before_patch: openRuns - patched,
      runs_before_patch: beforePatch,
      deprecated_in: deprecatedIn ?? null,
      deprecation_shipped: bounds.deprecationShipped,
      runs_before_deprecation: beforeDeprecation,
      retirable,
      verdict,
    });
  }
  return uses;
}
