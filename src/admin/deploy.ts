/**
 * `admin deploy status|ramp|promote|rollback` (CONTRACT §12): a release is a version of the
 * worker deployment `partner-api` (src/temporal/versioning.ts). A new release's worker polls
 * beside the previous one and takes no new run until an operator ramps it (a share of new runs)
 * or promotes it (all of them); the previous version keeps serving the runs pinned to it until
 * they drain, and a rollback makes it current again while its workers still run.
 * docs/operators/runbook.md, Release a new version.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { operatorName } from './audit';
import type { Config } from '../config';
import { DEPLOYMENT_NAME } from '../temporal/versioning';

const Status = temporal.api.enums.v1.WorkerDeploymentVersionStatus;
const TaskQueueType = temporal.api.enums.v1.TaskQueueType;

export interface Deployment {
  namespace: string;
  deploymentName: string;
  /** The task queues the deployment's workers poll (their pollers are counted per version). */
  taskQueues: string[];
}

export interface DeployVersion {
  build_id: string;
  /** current | ramping | draining (pinned runs may remain) | drained | inactive (never current yet) | created. */
  status: string;
  ramp_percent: number | null;
  created_at: string | null;
  /** When it last became current (null: never was). */
  last_current_at: string | null;
  /**
   * Workers of this version polling (distinct identities over the task queues' root partitions).
   * The server keeps a poller listed for a few minutes after it stops: 0 is sure, more may be stale.
   */
  pollers: number;
  /** Open runs pinned to this version: they finish only on its workers. */
  pinned_open_runs: number;
}

export interface DeployStatus {
  deployment: string;
  current_build_id: string | null;
  ramping_build_id: string | null;
  ramp_percent: number | null;
  versions: DeployVersion[];
}

export interface DeployMove {
  move: 'ramp' | 'promote' | 'rollback';
  /** What the move did, in words. */
  done: string;
  status: DeployStatus;
}

const STATUS_NAMES: Record<number, string> = {
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'current',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'ramping',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'draining',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'drained',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'inactive',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_CREATED]: 'created',
};

type Timestamp = { seconds?: unknown; nanos?: number | null } | null | undefined;
const millis = (t: Timestamp) => (t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0);
const iso = (t: Timestamp) => (millis(t) ? new Date(millis(t)).toISOString() : null);

/** The service's worker deployment, as configured: its name and the task queues its workers poll. */
export function deploymentOf(config: Pick<Config, 'temporal'>): Deployment {
  return { namespace: config.temporal.namespace, deploymentName: DEPLOYMENT_NAME, taskQueues: [config.temporal.taskQueue, config.temporal.webhookTaskQueue] };
}

/** The value of the TemporalWorkerDeploymentVersion search attribute for a version. */
export const deploymentVersionValue = (deploymentName: string, buildId: string) => `${deploymentName}:${buildId}`;

async function describe(client: Client, d: Deployment) {
  try {
    return await client.workflowService.describeWorkerDeployment({ namespace: d.namespace, deploymentName: d.deploymentName });
  } catch (err) {
    if ((err as { code?: number }).code === 5) throw new Error(`no worker of deployment ${d.deploymentName} has polled yet (is Worker Versioning on? TEMPORAL_WORKER_VERSIONING)`);
    throw err;
  }
}

/** Pollers now, per build id of the deployment, over its task queues (workflow and activity pollers). */
async function pollersByBuild(client: Client, d: Deployment): Promise<Map<string, number>> {
  const identities = new Map<string, Set<string>>();
  for (const name of d.taskQueues) {
    for (const taskQueueType of [TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY]) {
      const { pollers } = await client.workflowService.describeTaskQueue({ namespace: d.namespace, taskQueue: { name }, taskQueueType });
      for (const p of pollers ?? []) {
        const options = p.deploymentOptions;
        if (!options?.buildId || options.deploymentName !== d.deploymentName) continue;
        const set = identities.get(options.buildId) ?? new Set<string>();
        set.add(p.identity ?? '');
        identities.set(options.buildId, set);
      }
    }
  }
  return new Map([...identities].map(([build, set]) => [build, set.size]));
}

export async function deployStatus(client: Client, d: Deployment): Promise<DeployStatus> {
  return (await readDeployment(client, d)).status;
}

/** The deployment's status, with the token a move passes so that it fails if the deployment changed since. */
async function readDeployment(client: Client, d: Deployment): Promise<{ status: DeployStatus; conflictToken: Uint8Array | null | undefined }> {
  const { workerDeploymentInfo: info, conflictToken } = await describe(client, d);
  const routing = info?.routingConfig;
  const pollers = await pollersByBuild(client, d);
  const versions: DeployVersion[] = [];
  for (const v of info?.versionSummaries ?? []) {
    const buildId = v.deploymentVersion?.buildId ?? '';
    const ramping = routing?.rampingDeploymentVersion?.buildId === buildId;
    const pinned = await client.workflow.count(
      `TemporalWorkerDeploymentVersion = '${deploymentVersionValue(d.deploymentName, buildId)}' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'`,
    );
    versions.push({
      build_id: buildId,
      status: STATUS_NAMES[v.status ?? 0] ?? 'unknown',
      ramp_percent: ramping ? (routing?.rampingVersionPercentage ?? 0) : null,
      created_at: iso(v.createTime),
      last_current_at: iso(v.lastCurrentTime),
      pollers: pollers.get(buildId) ?? 0,
      pinned_open_runs: pinned.count,
    });
  }
  // Newest first: the release being rolled out heads the list.
  versions.sort((a, b) => (b.created_at ?? '').localeCompare(a.created_at ?? ''));
  const status: DeployStatus = {
    deployment: d.deploymentName,
    current_build_id: routing?.currentDeploymentVersion?.buildId || null,
    ramping_build_id: routing?.rampingDeploymentVersion?.buildId || null,
    ramp_percent: routing?.rampingDeploymentVersion?.buildId ? (routing.rampingVersionPercentage ?? 0) : null,
    versions,
  };
  return { status, conflictToken };
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
