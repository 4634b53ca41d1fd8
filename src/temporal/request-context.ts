/**
 * The partner's request id across Temporal (issue: operators see the service): a workflow started
 * while a request is handled carries its id in a header as well as its memo; the workflow
 * interceptors (workflows/request-id-interceptors.ts) pass it to each activity it schedules; an
 * activity runs inside that request's context, so the events it writes record the request that
 * caused them (`events.request_id`, operators only). Tracing's interceptors join these when on.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { ClientInterceptors, WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { REQUEST_ID_HEADER } from '../../workflows/messages';
import { currentRequestId, runInRequest } from '../api/request-store';
import { tracingClientInterceptors, tracingWorkerOptions, tracingWorkflowModules } from './tracing';

/** The compiled workflows entry point. */
export const WORKFLOWS_PATH = require.resolve('../../workflows');
const REQUEST_ID_WORKFLOW_INTERCEPTORS = require.resolve('../../workflows/request-id-interceptors');

/** The workflow interceptor modules every bundle of the service includes. */
export function serviceWorkflowInterceptorModules(): string[] {
  return [REQUEST_ID_WORKFLOW_INTERCEPTORS, ...tracingWorkflowModules()];
}

function withRequestId<T extends { headers: Record<string, unknown> }>(input: T): T {
  const requestId = currentRequestId();
  if (!requestId || input.headers[REQUEST_ID_HEADER]) return input;
  return { ...input, headers: { ...input.headers, [REQUEST_ID_HEADER]: defaultPayloadConverter.toPayload(requestId) } };
}

const requestIdClientInterceptor: WorkflowClientInterceptor = {
  start: (input, next) => next(withRequestId(input)),
  signalWithStart: (input, next) => next(withRequestId(input)),
};

/** Every client of the service (API, worker, admin CLI, tests) uses these. */
export function serviceClientInterceptors(): ClientInterceptors {
  return { workflow: [requestIdClientInterceptor, ...tracingClientInterceptors()] };
}

/** An activity runs in the context of the request its workflow was started by, when there was one. */
const requestIdActivityInterceptors: ActivityInterceptorsFactory = () => ({
  inbound: {
    execute: (input, next) => {
      const header = input.headers[REQUEST_ID_HEADER];
      const requestId = header ? defaultPayloadConverter.fromPayload<string>(header) : undefined;
      return requestId ? runInRequest(requestId, () => next(input)) : next(input);
    },
  },
});

/** A worker's interceptors and sinks (the workflow side is in its bundle: serviceWorkflowBundle). */
export function serviceWorkerInterceptors() {
  const tracing = tracingWorkerOptions();
  return {
    interceptors: { activity: [requestIdActivityInterceptors, ...(tracing.interceptors?.activity ?? [])] },
    ...(tracing.sinks ? { sinks: tracing.sinks } : {}),
  };
}
