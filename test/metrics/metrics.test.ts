import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Stack } from '../../bench/chaos-run';
import { PartnerClient } from '../../src/client/partner-client';
import { startReceiver } from '../helpers/receiver';
import { getStack, testSearchDataDir } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

/** One exported span, as the OTLP/JSON body gave it. */
interface ExportedSpan {
  service: string;
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
}

/** The spans in OTLP/JSON export bodies (ids hex, as OTLP/JSON encodes them). */
function spansOf(bodies: string[]): ExportedSpan[] {
  type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
  type KeyValue = { key: string; value: AnyValue };
  const value = (v: AnyValue) => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue;
  const spans: ExportedSpan[] = [];
  for (const body of bodies) {
    const parsed = JSON.parse(body) as { resourceSpans: Array<{ resource: { attributes: KeyValue[] }; scopeSpans: Array<{ spans: Array<{ name: string; kind: number; traceId: string; spanId: string; parentSpanId?: string; attributes?: KeyValue[] }> }> }> };
    for (const rs of parsed.resourceSpans) {
      const service = String(value(rs.resource.attributes.find((a) => a.key === 'service.name')!.value));
      for (const ss of rs.scopeSpans)
        for (const span of ss.spans)
          spans.push({ service, name: span.name, kind: span.kind, traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId || undefined, attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, value(a.value)])) });
    }
  }
  return spans;
}

function credentialOf(stack: Stack): PartnerClient {
  return new PartnerClient(stack.apiUrl, stack.sandboxCredential());
}

/** A quote and an order for an available name found by searching `q`. */
async function placeOrder(client: PartnerClient, q: string) {
  const name = (await client.get<{ data: Array<{ name: string; available: boolean }> }>(`/api/partner/v1/domains/search?q=${q}`)).body.data.find((h) => h.available)!.name;
  const quote = await client.post<{ quote_id: string; price_cents: number }>('/api/partner/v1/quotes', { domain: name });
  assert.equal(quote.status, 201, quote.text);
  const order = await client.post<{ public_id: string }>('/api/partner/v1/orders', { quote_id: quote.body.quote_id, external_payment_ref: `ops-test-${q}`, sale_price_cents: quote.body.price_cents }, { headers: { 'Idempotency-Key': randomUUID() } });
  assert.equal(order.status, 201, order.text);
  return order;
}

/**
 * The operators' view of a real `npm start` (CONTRACT §13), started with tracing on (the standard
 * OTEL_EXPORTER_OTLP_ENDPOINT, pointed at an OTLP/HTTP receiver here that keeps what it is sent
 * in memory): the API's metrics on their own port with the request histogram by route template,
 * the worker's with the Temporal SDK's `temporal_` metrics and the service's own; neither on the
 * public port. And one trace from `POST /orders` through the workflow start to its activities.
 */
describe('operators: metrics and traces of npm start, after signed requests and an order', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-metrics-'));
  let collector: Awaited<ReturnType<typeof startReceiver>>;
  let stack: Stack;

  before(async function () {
    this.timeout(10 * 60_000);
    collector = await startReceiver(() => 200);
    stack = new Stack(dir, { OTEL_EXPORTER_OTLP_ENDPOINT: new URL(collector.url).origin, OTEL_BSP_SCHEDULE_DELAY: '200' }, { seedEmbeddings: testSearchDataDir(getStack().config), prebuiltBundle: true });
    await stack.start(() => undefined);
  });

  after(async () => {
    await stack?.interrupt();
    stack?.kill();
    await collector?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('npm start prints both addresses; the API counts requests by route template and admission; the worker serves temporal_ metrics and the service’s', async function () {
    this.timeout(5 * 60_000);
    const printed = stack.lines.find((l) => l.text.includes('Metrics:'))?.text ?? '';
    const [apiMetrics, workerMetrics] = [...printed.matchAll(/(http:\/\/\S+\/metrics)/g)].map((m) => m[1]);
    assert.equal(apiMetrics, `http://127.0.0.1:${stack.ports.metrics}/metrics`, printed);
    assert.equal(workerMetrics, `http://127.0.0.1:${stack.ports.workerMetrics}/metrics`, printed);

    const client = credentialOf(stack);
    const order = await placeOrder(client, 'coffee');
    assert.equal((await client.get(`/api/partner/v1/orders/${order.body.public_id}`)).status, 200);

    const api = await (await fetch(apiMetrics)).text();
    assert.match(api, /partner_api_http_request_duration_seconds_bucket\{[^}]*route="\/api\/partner\/v1\/orders\/\{public_id\}",method="GET",status="200"/);
    assert.match(api, /partner_api_http_request_duration_seconds_count\{route="\/api\/partner\/v1\/orders",method="POST",status="201"\} 1/);
    assert.ok(!api.includes(order.body.public_id), 'never a concrete id');
    assert.match(api, /partner_api_admission_total\{outcome="admitted"\} [4-9]/);
    assert.match(api, /partner_api_search_duration_seconds_count\{outcome="ok"\} 1/);
    assert.match(api, /partner_api_db_pool_connections\{state="in_use"\}/);
    assert.equal((await fetch(`${stack.apiUrl}/metrics`)).status, 404, 'not on the public port');

    // The order completes in the sandbox within seconds: the worker's metrics show it.
    // Both are counted in the same activity (status, then the sale's posting): wait for the second too.
    const worker = await waitFor(
      async () => (await fetch(workerMetrics)).text(),
      (text) => /partner_api_fulfilment_outcomes_total\{environment="sandbox",status="TRANSFER_COMPLETED"\} 1/.test(text) && /partner_api_ledger_postings_total\{kind="sale"\} 1/.test(text) && /partner_api_reconcile_differences\{/.test(text),
      120_000,
      "the completed order, its sale's posting and a reconcile pass in the worker's metrics",
    );
    assert.match(worker, /^temporal_\w+/m, 'the SDK metrics');
    assert.match(worker, /temporal_workflow_task_schedule_to_start_latency/);
    assert.match(worker, /partner_api_fulfilment_outcomes_total\{environment="sandbox",status="TRANSFER_COMPLETED"\} 1/);
    assert.match(worker, /partner_api_ledger_postings_total\{kind="sale"\} 1/);
    assert.match(worker, /partner_api_registrar_call_duration_seconds_count\{activity="\w+",outcome="ok"\}/);
    // The first scrape started a reconcile pass in the background; a later one serves its result.
    assert.match(worker, /partner_api_reconcile_differences\{environment="sandbox"\} 0/);
    assert.match(worker, /partner_api_reconcile_differences\{environment="live"\} 0/);
    assert.match(worker, /partner_api_reconcile_last_run_timestamp_seconds [1-9]/);
  });

  it('traces one order from POST /orders through the workflow start to its activities, across the API and the worker', async function () {
    this.timeout(5 * 60_000);
    const client = credentialOf(stack);
    const order = await placeOrder(client, 'bakery');
    const requestId = order.headers.get('x-request-id');
    assert.ok(requestId);

    let spans: ExportedSpan[] = [];
    const traced = () => {
      spans = spansOf(collector.accepted.filter((r) => r.headers['content-type']?.includes('json')).map((r) => r.body));
      const root = spans.find((s) => s.attributes['partner_api.request_id'] === requestId);
      const start = root && spans.find((s) => s.name === 'StartWorkflow:orderFulfilmentWorkflow' && s.traceId === root.traceId);
      const trace = start ? spans.filter((s) => s.traceId === start.traceId) : [];
      const complete = trace.some((s) => s.name === 'RunWorkflow:orderFulfilmentWorkflow') && trace.filter((s) => s.name.startsWith('RunActivity:')).length >= 2;
      return { start, complete, spanNames: [...new Set(spans.map((s) => s.name))] };
    };
    const { start } = await waitFor(traced, (t) => t.complete, 120_000, "the request's trace with its workflow's run and two activities");
    assert.ok(start, `no StartWorkflow span in the request's trace; got ${[...new Set(spans.map((s) => s.name))].join(', ')}`);
    const trace = spans.filter((s) => s.traceId === start.traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const parentOf = (s: ExportedSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);

    // The API: the HTTP server span (the root: this client sent no traceparent), named by route
    // template, its request id on it; the router's span under it, then the workflow's start.
    const chain: ExportedSpan[] = [];
    for (let up = parentOf(start); up; up = parentOf(up)) chain.push(up);
    const server = chain.at(-1)!;
    assert.ok(chain.some((s) => s.name === 'router - /api/partner/v1/orders'), chain.map((s) => s.name).join(' < '));
    assert.equal(server.attributes['partner_api.request_id'], requestId, chain.map((s) => `${s.name} ${JSON.stringify(s.attributes)}`).join('\n'));
    assert.equal(server.service, 'partner-api');
    assert.equal(server.kind, 2, 'a server span');
    assert.equal(server.parentSpanId, undefined);
    assert.equal(server.name, 'POST /api/partner/v1/orders');
    assert.equal(server.attributes['http.route'], '/api/partner/v1/orders');
    assert.ok(!String(server.attributes['http.target'] ?? '').includes('?'), 'paths only');
    assert.equal(start.service, 'partner-api');

    // The worker: the workflow's run under the start, its activities under their scheduling.
    const run = trace.find((s) => s.name === 'RunWorkflow:orderFulfilmentWorkflow');
    assert.ok(run, `no RunWorkflow span in the trace: ${trace.map((s) => s.name).join(', ')}`);
    assert.equal(run.service, 'partner-api-worker');
    assert.equal(run.parentSpanId, start.spanId);
    const activities = trace.filter((s) => s.name.startsWith('RunActivity:'));
    assert.ok(activities.length >= 2, trace.map((s) => s.name).join(', '));
    for (const activity of activities) {
      assert.equal(activity.service, 'partner-api-worker');
      const scheduled = parentOf(activity)!;
      assert.equal(scheduled.name, activity.name.replace('RunActivity:', 'StartActivity:'));
      // Up the chain to the workflow's run and from there to the partner's request.
      let up: ExportedSpan | undefined = scheduled;
      while (up && up !== run) up = parentOf(up);
      assert.equal(up, run, `${activity.name} is not under the workflow's run`);
    }
  });
});
