/**
 * The one place the service starts workflows: the id, what a second start of that id does, the
 * search attributes operators filter by, and the summary and details the Temporal UI shows at
 * the top of the run ("Order ord_… bakery.co for partner …").
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy, WorkflowIdReusePolicy, type Client, type WorkflowHandle, type WorkflowStartOptions } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import type { WorkflowArgs, WorkflowType } from '../../workflows/messages';
import type { SearchAttributePair } from '@temporalio/common';
import { BusinessStatus, BusinessStatusSince, Domain, Environment, PartnerId } from '../../workflows/search-attributes';
import { currentRequestId } from '../api/request-store';

/** A client and the task queues its workflows run on. */
export interface WorkflowStarter {
  client: Client;
  taskQueue: string;
  /**
   * Webhook deliveries' own task queue (their own worker and slots), so a slow partner endpoint
   * never takes the slots of registrar and database steps; absent means `taskQueue`.
   */
  webhookTaskQueue?: string;
}

/** The starter for a process configured with TEMPORAL_TASK_QUEUE and TEMPORAL_WEBHOOK_TASK_QUEUE. */
export function configuredStarter(client: Client, temporal: { taskQueue: string; webhookTaskQueue: string }): WorkflowStarter {
  return { client, taskQueue: temporal.taskQueue, webhookTaskQueue: temporal.webhookTaskQueue };
}

/**
 * What a start does when the id was used before:
 * - `once`: a running one is reused, a closed one is never started again (a retried order cannot
 *   start a second fulfilment); "already started" is not an error.
 * - `fresh`: the id is new (made for this start); any earlier use is an error.
 * - `singleton`: a running one is reused, a closed one is started again (maintenance workflows).
 */
export type StartMode = 'once' | 'fresh' | 'singleton';

const POLICIES: Record<StartMode, Pick<WorkflowStartOptions, 'workflowIdConflictPolicy' | 'workflowIdReusePolicy'>> = {
  once: { workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING, workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE },
  fresh: { workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL, workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE },
  singleton: { workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING, workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE },
};

/** The business facts a run is filtered by in the UI; the status also stamps BusinessStatusSince. */
export interface RunAttributes {
  partnerId?: string;
  domain?: string;
  environment?: string;
  businessStatus?: string;
}

export function searchAttributes(attributes: RunAttributes, now = new Date()): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [];
  if (attributes.partnerId) pairs.push({ key: PartnerId, value: attributes.partnerId });
  if (attributes.domain) pairs.push({ key: Domain, value: attributes.domain });
  if (attributes.environment) pairs.push({ key: Environment, value: attributes.environment });
  if (attributes.businessStatus) pairs.push({ key: BusinessStatus, value: attributes.businessStatus }, { key: BusinessStatusSince, value: now });
  return pairs;
}

export interface StartSpec<K extends WorkflowType> {
  workflowId: string;
  args: WorkflowArgs[K];
  mode: StartMode;
  /** One line: what the run is and for whom. */
  summary: string;
  /** Markdown the UI shows under the summary: the ids an operator needs and where to act. */
  details?: string;
  attributes?: RunAttributes;
  /** Signal-with-start: the run (started if none runs) receives this argument-less signal. */
  signal?: SignalDefinition<[]>;
}

/**
 * Starts the workflow type named `workflowType` as `spec` says: by name, so that nothing here
 * imports workflow code. Returns its handle, or undefined when a `once` start found the id
 * already used (closed or, for a signal-less start, running: either way nothing to do).
 */
export async function startWorkflow<K extends WorkflowType>(w: WorkflowStarter, workflowType: K, spec: StartSpec<K>): Promise<WorkflowHandle | undefined> {
  const requestId = currentRequestId();
  const options: WorkflowStartOptions = {
    workflowId: spec.workflowId,
    taskQueue: w.taskQueue,
    args: spec.args,
    ...POLICIES[spec.mode],
    staticSummary: spec.summary,
    staticDetails: spec.details,
    typedSearchAttributes: searchAttributes(spec.attributes ?? {}),
    // The partner's request that started it (X-Request-Id), for an operator tracing one.
    ...(requestId ? { memo: { request_id: requestId } } : {}),
  };
  try {
    if (spec.signal) return await w.client.workflow.signalWithStart(workflowType, { ...options, signal: spec.signal, signalArgs: [] });
    return await w.client.workflow.start(workflowType, options);
  } catch (err) {
    if (spec.mode === 'once' && err instanceof WorkflowExecutionAlreadyStartedError) return undefined;
    throw err;
  }
}
