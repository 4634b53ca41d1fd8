/**
 * `admin deploy status|ramp|promote|rollback` (CONTRACT §12): a release is a version of the
 * worker deployment `partner-api` (src/temporal/versioning.ts). A new release's worker polls
 * beside the previous one and takes no new run until an operator ramps it (a share of new runs)
 * or promotes it (all of them); the previous version keeps serving the runs pinned to it until
 * they drain, and a rollback makes it current again while its workers still run.
 * docs/operators/runbook.md, Release a new version. The moves are here; the status they read and
 * return, which the worker's gauges read too, is src/temporal/deployment.ts.
 */
import type { Client } from '@temporalio/client';
import { operatorName } from './audit';
import { deployStatus, readDeployment, type Deployment, type DeployStatus, type DeployVersion } from '../temporal/deployment';

export interface DeployMove {
  move: 'ramp' | 'promote' | 'rollback';
  /** What the move did, in words. */
  done: string;
  status: DeployStatus;
}

/**
 * The release being rolled out: the one ramping, else the newest version created after the
 * current one whose workers poll (after a rollback, the version rolled back from, promoted again).
 */
function rollingOut(status: DeployStatus): DeployVersion | undefined {
  if (status.ramping_build_id) return status.versions.find((v) => v.build_id === status.ramping_build_id);
  const current = status.versions.find((v) => v.build_id === status.current_build_id);
  return status.versions.find((v) => v.build_id !== status.current_build_id && v.pollers > 0 && (!current || (v.created_at ?? '') > (current.created_at ?? '')));
}

const identity = (move: string) => `admin deploy ${move} (${operatorName()})`;

/** Sends `percent` of new runs to the release being rolled out; the rest stay on the current version. */
export async function rampDeployment(client: Client, d: Deployment, percent: number): Promise<DeployMove> {
  if (!Number.isFinite(percent) || percent < 0 || percent > 100) throw new Error(`a ramp is a percentage from 0 to 100, not ${percent}`);
  const { status, conflictToken } = await readDeployment(client, d);
  const target = rollingOut(status);
  if (!target) throw new Error('no new version to ramp: start the new release’s worker (with a new build id) beside the current one first');
  await client.workflowService.setWorkerDeploymentRampingVersion({
    namespace: d.namespace,
    deploymentName: d.deploymentName,
    buildId: target.build_id,
    percentage: percent,
    conflictToken,
    identity: identity('ramp'),
  });
  return { move: 'ramp', done: `${percent}% of new runs go to ${target.build_id}`, status: await deployStatus(client, d) };
}

/** Makes the release being rolled out current: every new run, and every auto-upgrading run's next task, goes to it. */
export async function promoteDeployment(client: Client, d: Deployment): Promise<DeployMove> {
  const { status: before, conflictToken } = await readDeployment(client, d);
  const target = rollingOut(before);
  if (!target) throw new Error(`no new version to promote (current: ${before.current_build_id ?? 'none'}): start the new release’s worker first`);
  if (target.pollers === 0) throw new Error(`${target.build_id} has no worker polling: start it before promoting it`);
  await client.workflowService.setWorkerDeploymentCurrentVersion({ namespace: d.namespace, deploymentName: d.deploymentName, buildId: target.build_id, conflictToken, identity: identity('promote') });
  return { move: 'promote', done: `${target.build_id} is current (was ${before.current_build_id ?? 'none'})`, status: await deployStatus(client, d) };
}

/**
 * Undoes the last move: a ramp is withdrawn (every new run back on the current version), else the
 * version current before this one becomes current again, if its workers still poll.
 */
export async function rollbackDeployment(client: Client, d: Deployment): Promise<DeployMove> {
  const { status: before, conflictToken } = await readDeployment(client, d);
  if (before.ramping_build_id) {
    await client.workflowService.setWorkerDeploymentRampingVersion({ namespace: d.namespace, deploymentName: d.deploymentName, buildId: '', percentage: 0, conflictToken, identity: identity('rollback') });
    return { move: 'rollback', done: `the ramp of ${before.ramping_build_id} withdrawn: new runs all go to ${before.current_build_id ?? 'unversioned workers'}`, status: await deployStatus(client, d) };
  }
  const current = before.versions.find((v) => v.build_id === before.current_build_id);
  // Only back: a version created before the current one (a second rollback never brings back the
  // release just rolled back from). Among them the one current most recently, else the newest.
  const older = before.versions.filter((v) => v.build_id !== before.current_build_id && (v.created_at ?? '') < (current?.created_at ?? ''));
  const previous = older.filter((v) => v.last_current_at).sort((a, b) => (b.last_current_at ?? '').localeCompare(a.last_current_at ?? ''))[0] ?? older[0];
  if (!previous) throw new Error(`no earlier version to roll back to (current: ${before.current_build_id ?? 'none'})`);
  if (previous.pollers === 0) throw new Error(`${previous.build_id} has no worker polling: start the previous release's worker again, then roll back`);
  await client.workflowService.setWorkerDeploymentCurrentVersion({ namespace: d.namespace, deploymentName: d.deploymentName, buildId: previous.build_id, conflictToken, identity: identity('rollback') });
  return { move: 'rollback', done: `${previous.build_id} is current again (was ${before.current_build_id})`, status: await deployStatus(client, d) };
}
