import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Stack } from '../../bench/chaos-run';
import { PartnerClient } from '../../src/client/partner-client';

/**
 * The operators' metrics (CONTRACT §13) of a real `npm start`: the API's on its own port with the
 * request histogram by route template, the worker's with the Temporal SDK's `temporal_` metrics
 * and the service's own; neither on the public port.
 */
describe('metrics: the API and the worker, scraped after signed requests and an order', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-metrics-'));
  const stack = new Stack(dir);

  after(async () => {
    await stack.interrupt();
    stack.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('npm start prints both addresses; the API counts requests by route template and admission; the worker serves temporal_ metrics and the service’s', async function () {
    this.timeout(10 * 60_000);
    await stack.start(() => undefined);
    const printed = stack.lines.find((l) => l.text.includes('Metrics:'))?.text ?? '';
    const [apiMetrics, workerMetrics] = [...printed.matchAll(/(http:\/\/\S+\/metrics)/g)].map((m) => m[1]);
    assert.equal(apiMetrics, `http://127.0.0.1:${stack.ports.metrics}/metrics`, printed);
    assert.equal(workerMetrics, `http://127.0.0.1:${stack.ports.workerMetrics}/metrics`, printed);

    const keyId = /PARTNER_KEY_ID=(\S+)/.exec(stack.lines.map((l) => l.text).join('\n'))![1];
    const secret = /PARTNER_SECRET=(\S+)/.exec(stack.lines.map((l) => l.text).join('\n'))![1];
    const client = new PartnerClient(stack.apiUrl, { keyId, secret });
    const name = (await client.get<{ data: Array<{ name: string; available: boolean }> }>('/api/partner/v1/domains/search?q=coffee')).body.data.find((h) => h.available)!.name;
    const quote = await client.post<{ quote_id: string; price_cents: number }>('/api/partner/v1/quotes', { domain: name });
    assert.equal(quote.status, 201, quote.text);
    const order = await client.post<{ public_id: string }>('/api/partner/v1/orders', { quote_id: quote.body.quote_id, external_payment_ref: 'metrics-test', sale_price_cents: quote.body.price_cents }, { headers: { 'Idempotency-Key': randomUUID() } });
    assert.equal(order.status, 201, order.text);
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
    const deadline = Date.now() + 120_000;
    let worker = '';
    while (Date.now() < deadline) {
      worker = await (await fetch(workerMetrics)).text();
      // Both are counted in the same activity (status, then the sale's posting): wait for the second too.
      if (/partner_api_fulfilment_outcomes_total\{environment="sandbox",status="TRANSFER_COMPLETED"\} 1/.test(worker) && /partner_api_ledger_postings_total\{kind="sale"\} 1/.test(worker)) break;
      await new Promise((r) => setTimeout(r, 1_000));
    }
    assert.match(worker, /^temporal_\w+/m, 'the SDK metrics');
    assert.match(worker, /temporal_workflow_task_schedule_to_start_latency/);
    assert.match(worker, /partner_api_fulfilment_outcomes_total\{environment="sandbox",status="TRANSFER_COMPLETED"\} 1/);
    assert.match(worker, /partner_api_ledger_postings_total\{kind="sale"\} 1/);
    assert.match(worker, /partner_api_registrar_call_duration_seconds_count\{activity="\w+",outcome="ok"\}/);
  });
});
