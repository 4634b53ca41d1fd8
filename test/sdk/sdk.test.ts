import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Stack } from '../../bench/chaos-run';
import { createClient } from '../../sdk/src';
import { getStack, newPartner, ownTemporal, testSearchDataDir } from '../helpers/stack';
import { loadConfig } from '../../src/config';
import { freshDomain } from '../helpers/orders';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../../..');
const SDK = path.join(root, 'sdk');

/** The SDK's own development tools (openapi-typescript, TypeScript 5), from its lockfile. */
async function sdkTools(): Promise<void> {
  if (!existsSync(path.join(SDK, 'node_modules/.bin/openapi-typescript'))) await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: SDK });
}

/**
 * The partner SDK (CONTRACT §14): its committed OpenAPI document and types are exactly what the
 * server serves and openapi-typescript generates; its typed client signs what the API accepts;
 * and the package, packed and installed alone in an empty directory, runs a search, a quote, an
 * order, its command line and a webhook verification against a real `npm start`.
 */
describe('the partner SDK (sdk/)', function () {
  this.timeout(10 * 60_000);

  describe('against the test stack', () => {
    ownTemporal();

    it('sdk/openapi.json and sdk/src/schema.ts are the served document and what openapi-typescript generates from it', async () => {
      await sdkTools();
      const served = (await (await fetch(`${getStack().baseUrl}/api/partner/v1/openapi.json`)).json()) as Record<string, unknown>;
      // The server's address is the deployment's, not the document's.
      const { servers: _servers, ...document } = served;
      const scratch = mkdtempSync(path.join(os.tmpdir(), 'partner-sdk-types-'));
      try {
        writeFileSync(path.join(scratch, 'openapi.json'), `${JSON.stringify(document, null, 2)}\n`);
        await run(path.join(SDK, 'node_modules/.bin/openapi-typescript'), [path.join(scratch, 'openapi.json'), '-o', path.join(scratch, 'schema.ts')], { cwd: SDK });
        for (const [made, committed] of [
          ['openapi.json', 'openapi.json'],
          ['schema.ts', 'src/schema.ts'],
        ] as const) {
          const fresh = readFileSync(path.join(scratch, made), 'utf8');
          if (process.env.SDK_WRITE === '1') writeFileSync(path.join(SDK, committed), fresh);
          assert.equal(readFileSync(path.join(SDK, committed), 'utf8'), fresh, `sdk/${committed} is not what the server serves now: SDK_WRITE=1 regenerates it`);
        }
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    });

    it('the typed client signs every request: search, quote, order (typed params and bodies), and an error answer typed as the Error schema', async () => {
      const { keyId, secret } = await newPartner();
      const client = createClient({ baseUrl: getStack().baseUrl, keyId, secret });
      const domain = await freshDomain();
      const quote = await client.POST('/api/partner/v1/quotes', { body: { domain: domain.name } });
      assert.equal(quote.response.status, 201, JSON.stringify(quote.error));
      const order = await client.POST('/api/partner/v1/orders', {
        params: { header: { 'Idempotency-Key': randomUUID() } },
        body: { quote_id: quote.data!.quote_id, external_payment_ref: 'sdk-typed', sale_price_cents: quote.data!.price_cents },
      });
      assert.equal(order.response.status, 201, JSON.stringify(order.error));
      const read = await client.GET('/api/partner/v1/orders/{public_id}', { params: { path: { public_id: order.data!.public_id } } });
      assert.equal(read.data?.domain, domain.name);
      const missing = await client.GET('/api/partner/v1/pricing', { params: { query: { domain: 'not-listed-anywhere.example' } } });
      assert.equal(missing.response.status, 404);
      assert.equal(missing.error?.error.code, 'not_found');
    });
  });

  describe('packed and installed alone, against npm start', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'partner-sdk-'));
    const stack = new Stack(path.join(dir, 'data'), {}, { seedEmbeddings: testSearchDataDir(loadConfig()), prebuiltBundle: true });
    const project = path.join(dir, 'project');

    before(async function () {
      this.timeout(10 * 60_000);
      await sdkTools();
      await run(path.join(SDK, 'node_modules/.bin/tsc'), ['-p', path.join(SDK, 'tsconfig.json')]);
      const { stdout } = await run('npm', ['pack', '--pack-destination', dir, '--ignore-scripts', '--json'], { cwd: SDK });
      const tarball = path.join(dir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);
      await run('mkdir', ['-p', project]);
      await run('npm', ['init', '-y'], { cwd: project });
      await run('npm', ['install', '--no-audit', '--no-fund', tarball], { cwd: project });
      await stack.start(() => undefined);
    });

    after(async () => {
      await stack.interrupt();
      stack.kill();
      rmSync(dir, { recursive: true, force: true });
    });

    it('installs without the server’s dependencies and runs a search, a quote, an order, the partner-api command line and a webhook verification', async () => {
      const installed = readdirSync(path.join(project, 'node_modules')).filter((n) => !n.startsWith('.'));
      for (const server of ['koa', 'typeorm', '@temporalio', 'pg', 'ioredis']) assert.ok(!installed.includes(server), `${server} is not installed with the SDK`);
      const { stdout: du } = await run('du', ['-sk', path.join(project, 'node_modules')]);
      console.log(`      (the SDK installed alone: ${Math.round(Number(du.split('\t')[0]) / 1024 * 10) / 10} MiB in node_modules: ${installed.join(', ')})`);

      const { keyId, secret } = stack.sandboxCredential();
      const env = { ...process.env, PARTNER_API_URL: stack.apiUrl, PARTNER_KEY_ID: keyId, PARTNER_SECRET: secret };
      // One program using only the installed package: its own webhook receiver, the typed client, verifyWebhook.
      writeFileSync(
        path.join(project, 'use.js'),
        `const { createClient, verifyWebhook } = require('@domain-marketplace/partner-sdk');
const { randomUUID } = require('node:crypto');
const http = require('node:http');
(async () => {
  const deliveries = [];
  const receiver = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => { deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }); res.writeHead(200).end(); });
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const client = createClient({ baseUrl: process.env.PARTNER_API_URL, keyId: process.env.PARTNER_KEY_ID, secret: process.env.PARTNER_SECRET });
  const hook = await client.PUT('/api/partner/webhooks', { body: { url: 'http://127.0.0.1:' + receiver.address().port + '/hooks' } });
  const secret = hook.data.secret;
  const search = await client.GET('/api/partner/v1/domains/search', { params: { query: { q: 'coffee' } } });
  const name = search.data.data.find((h) => h.available).name;
  const quote = await client.POST('/api/partner/v1/quotes', { body: { domain: name } });
  const order = await client.POST('/api/partner/v1/orders', { params: { header: { 'Idempotency-Key': randomUUID() } }, body: { quote_id: quote.data.quote_id, external_payment_ref: 'sdk-installed', sale_price_cents: quote.data.price_cents } });
  const id = order.data.public_id;
  // The program has only the SDK, not the suite's waitFor: its own poll, which fails by name.
  const deadline = Date.now() + 120000;
  while (!deliveries.some((d) => d.body.includes(id)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  const delivery = deliveries.find((d) => d.body.includes(id));
  if (!delivery) throw new Error('no webhook delivery of order ' + id + ' within 120 s (' + deliveries.length + ' deliveries of other events)');
  const event = verifyWebhook({ secret, headers: delivery.headers, body: delivery.body });
  let tamperedRefused = false;
  try { verifyWebhook({ secret, headers: delivery.headers, body: delivery.body.replace('order.created', 'order.created ') }); } catch { tamperedRefused = true; }
  receiver.close();
  console.log(JSON.stringify({ secret, statuses: [hook.response.status, search.response.status, quote.response.status, order.response.status], order: id, event: { type: event.type, order: event.data.public_id }, tamperedRefused }));
})().catch((err) => { console.error(err); process.exit(1); });
`,
      );
      const used = JSON.parse((await run(process.execPath, ['use.js'], { cwd: project, env })).stdout) as { secret: string; statuses: number[]; order: string; event: { type: string; order: string }; tamperedRefused: boolean };
      assert.deepEqual(used.statuses, [200, 200, 201, 201]);
      assert.match(used.secret, /^whsec_/);
      assert.deepEqual(used.event, { type: 'order.created', order: used.order }, 'the delivery verified with the installed verifyWebhook');
      assert.equal(used.tamperedRefused, true);

      // The command line the package installs.
      const call = await run(path.join(project, 'node_modules/.bin/partner-api'), ['call', 'GET', `/api/partner/v1/orders/${used.order}`], { cwd: project, env });
      assert.equal((JSON.parse(call.stdout) as { public_id: string }).public_id, used.order);
    });
  });
});
