/** The admin CLI's Temporal client: TEMPORAL_ADDRESS, else the dev stack's server on this machine. */
import { serviceClientInterceptors } from '../temporal/request-context';
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { temporalConnectionOptions } from '../temporal/connect-options';
import { PATCHES } from '../../workflows/patches';

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
  /** Open runs that took the patch's new branch (TemporalChangeVersion holds its id). */
  open_runs_patched: number;
  /**
   * Open runs without it: started before the patch was deployed (they need the old branch), or
   * new runs not yet at the patched() call. The patch may be retired only at 0.
   */
  open_runs_before_patch: number;
  retirable: boolean;
}

/**
 * Per workflow type and patch id, the open runs that still need the old branch, from visibility:
 * one listing of the type's open runs, each run's TemporalChangeVersion read from the same page,
 * so a run starting meanwhile cannot make the figures disagree.
 */
export async function patchUse(client: Client): Promise<PatchUse[]> {
  const uses: PatchUse[] = [];
  for (const { workflowType, patchId } of Object.values(PATCHES)) {
    let openRuns = 0;
    let patched = 0;
    for await (const run of client.workflow.list({ query: `WorkflowType = '${workflowType}' AND ExecutionStatus = 'Running'` })) {
      openRuns++;
      const versions = run.searchAttributes.TemporalChangeVersion;
      if (Array.isArray(versions) && (versions as unknown[]).includes(patchId)) patched++;
    }
    uses.push({ workflow_type: workflowType, patch_id: patchId, open_runs: openRuns, open_runs_patched: patched, open_runs_before_patch: openRuns - patched, retirable: openRuns === patched });
  }
  return uses;
}
