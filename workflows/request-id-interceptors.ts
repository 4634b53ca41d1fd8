/**
 * Workflow interceptors (bundled with the workflows, src/temporal/request-context.ts): the
 * partner's request id that a run was started with (a header its start carries) goes on to every
 * activity it schedules, the children it starts and its continuation, so the events an activity
 * writes record the request that caused them. Headers are not part of a command's identity:
 * histories recorded without them replay unchanged.
 */
import type { Payload } from '@temporalio/common';
import type { WorkflowInterceptors } from '@temporalio/workflow';
import { REQUEST_ID_HEADER } from './messages';

export const interceptors = (): WorkflowInterceptors => {
  // Per run: the factory is called for each workflow the worker runs.
  let requestId: Payload | undefined;
  const carried = <T extends { headers: Record<string, Payload> }>(input: T): T => (requestId && !input.headers[REQUEST_ID_HEADER] ? { ...input, headers: { ...input.headers, [REQUEST_ID_HEADER]: requestId } } : input);
  return {
    inbound: [
      {
        execute: (input, next) => {
          requestId = input.headers[REQUEST_ID_HEADER];
          return next(input);
        },
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => next(carried(input)),
        scheduleLocalActivity: (input, next) => next(carried(input)),
        startChildWorkflowExecution: (input, next) => next(carried(input)),
        continueAsNew: (input, next) => next(carried(input)),
      },
    ],
  };
};
