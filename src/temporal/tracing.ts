/**
 * The Temporal side of tracing (src/telemetry/tracing.ts), when it is installed: the client's
 * interceptor puts the caller's span into a workflow start's headers; the worker's workflow
 * interceptors (bundled into the workflow code) and activity interceptors continue that trace,
 * workflow spans leaving the sandbox through a sink. Nothing of it is added when tracing is off,
 * so recorded histories replay against the same bundle as always.
 */
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import { activeTracing, workflowSpanProcessor } from '../telemetry/tracing';

const WORKFLOW_INTERCEPTORS = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** The client's interceptors for tracing (none when it is off). */
export function tracingClientInterceptors(): WorkflowClientInterceptor[] {
  return activeTracing() ? [new OpenTelemetryWorkflowClientInterceptor()] : [];
}

/** The workflow interceptor modules a bundle must include (none when tracing is off). */
export function tracingWorkflowModules(): string[] {
  return activeTracing() ? [WORKFLOW_INTERCEPTORS] : [];
}

/** A worker's activity interceptors and the workflow spans' sink (nothing when tracing is off). */
export function tracingWorkerOptions(): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  const tracing = activeTracing();
  if (!tracing) return {};
  return {
    interceptors: {
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
    },
    // The interceptors package is typed against the OpenTelemetry SDK 1.x; the shapes it uses are 2.x's too (workflowSpanProcessor adapts the spans).
    sinks: { exporter: makeWorkflowExporter(workflowSpanProcessor(tracing.spanProcessor) as never, tracing.resource as never) },
  };
}
