/**
 * OpenTelemetry tracing: off unless the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; then every process of the service exports its
 * spans over OTLP/HTTP, and one trace runs from a partner's request through the workflow it starts
 * to that workflow's activities:
 *   HTTP `POST /api/partner/v1/orders` (http + Koa instrumentation, named by route template)
 *   └ StartWorkflow:orderFulfilmentWorkflow (the client interceptor; the context rides in headers)
 *     └ RunWorkflow:orderFulfilmentWorkflow (worker: the workflow interceptors, spans sent by a sink)
 *       └ StartActivity:… └ RunActivity:… (the activity interceptor)
 * The other standard variables apply as the OpenTelemetry SDK reads them (`OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*`, `OTEL_TRACES_SAMPLER`).
 *
 * Installed once per process, before Koa and http are loaded (src/telemetry/register-api.ts is the
 * API entry points' first import): the instrumentations patch modules as they load.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KoaInstrumentation, KoaLayerType } from '@opentelemetry/instrumentation-koa';
import { defaultResource, detectResources, envDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-node';
import type { IncomingMessage } from 'node:http';

export interface Tracing {
  resource: Resource;
  spanProcessor: SpanProcessor;
  /** Exports what is pending and stops. */
  shutdown(): Promise<void>;
}

let installed: Tracing | undefined;

export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) && env.OTEL_SDK_DISABLED !== 'true';
}

/** This process's tracing, when configured; `serviceName` unless OTEL_SERVICE_NAME says otherwise. */
export function installTracing(serviceName: string): Tracing | undefined {
  if (installed || !tracingConfigured()) return installed;
  // The environment's attributes (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) win over the default name.
  const resource = defaultResource().merge(resourceFromAttributes({ 'service.name': serviceName })).merge(detectResources({ detectors: [envDetector] }));
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  registerInstrumentations({
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes are not partner traffic.
        ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|metrics)(\?|$)/.test(req.url ?? ''),
        // Query strings can carry tokens (a checkout's `pt`, progress links): spans keep paths only.
        applyCustomAttributesOnSpan: (span, request) => {
          if (!('socket' in request) || !(request as IncomingMessage).url) return;
          const pathOnly = (request as IncomingMessage).url!.split('?')[0]!;
          span.setAttribute('http.target', pathOnly);
          span.setAttribute('url.path', pathOnly);
          span.setAttribute('url.query', '');
          span.setAttribute('http.url', `http://${(request as IncomingMessage).headers.host ?? 'localhost'}${pathOnly}`);
        },
      }),
      // Router layers only (one span naming the route template); every middleware would be noise.
      new KoaInstrumentation({ ignoreLayersType: [KoaLayerType.MIDDLEWARE] }),
    ],
  });
  installed = { resource, spanProcessor, shutdown: () => provider.shutdown() };
  return installed;
}

/** This process's tracing, if installed. */
export function activeTracing(): Tracing | undefined {
  return installed;
}

/**
 * Workflow spans are made inside the workflow sandbox by the Temporal interceptors' own copy of
 * the OpenTelemetry SDK (1.x: `instrumentationLibrary`, `parentSpanId`); the service's SDK (2.x)
 * reads `instrumentationScope` and `parentSpanContext`. This hands them on in the 2.x shape.
 */
export function workflowSpanProcessor(target: SpanProcessor): SpanProcessor {
  return {
    onStart: () => undefined,
    onEnd: (span) => {
      const old = span as ReadableSpan & { instrumentationLibrary?: ReadableSpan['instrumentationScope']; parentSpanId?: string };
      const context = span.spanContext();
      target.onEnd({
        ...old,
        instrumentationScope: old.instrumentationScope ?? old.instrumentationLibrary ?? { name: '@temporalio/interceptors-opentelemetry' },
        parentSpanContext: old.parentSpanContext ?? (old.parentSpanId ? { traceId: context.traceId, spanId: old.parentSpanId, traceFlags: context.traceFlags, isRemote: false } : undefined),
      });
    },
    forceFlush: () => target.forceFlush(),
    shutdown: () => Promise.resolve(),
  };
}
