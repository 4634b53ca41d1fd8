/**
 * The worker deployment `partner-api` under Worker Versioning (src/temporal/versioning.ts), as
 * Temporal reports it: each version's status, ramp, pollers and pinned open runs. Read by the
 * worker's deployment gauges (src/metrics/metrics.ts) and by `admin deploy` (src/admin/deploy.ts),
 * which moves it.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Config } from '../config';
import { DEPLOYMENT_NAME } from './versioning';

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
export async function readDeployment(client: Client, d: Deployment): Promise<{ status: DeployStatus; conflictToken: Uint8Array | null | undefined }> {
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
