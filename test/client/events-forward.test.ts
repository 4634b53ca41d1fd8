import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import path from 'node:path';
import { PartnerClient } from '../../sdk/src/partner-client';
import { forwardEvents } from '../../sdk/src/forward-events';
import { listenOnLoopback } from '../../src/main/loopback';
import { verifyWebhook } from '../../src/client/webhooks';
import { appendEvent } from '../../src/events/outbox';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { startReceiver, type Received } from '../helpers/receiver';
import { waitFor } from '../helpers/wait';

const SECRET = 'whsec_forward_0123456789abcdef';

/** `npm run --silent call -- events forward …` as a partner runs it, against the suite's API. */
function forwarder(args: string[], credential: { keyId: string; secret: string }, extraEnv: Record<string, string> = {}) {
  const s = getStack();
  const child = spawn(process.execPath, [path.join(s.config.projectRoot, 'dist/src/client/cli.js'), 'events', 'forward', ...args], {
    env: { ...process.env, PARTNER_API_URL: s.baseUrl, PARTNER_KEY_ID: credential.keyId, PARTNER_SECRET: credential.secret, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    stderr: () => stderr,
    exited,
    ready: () => waitFor(() => stderr, (text) => text.includes('forwarding events to'), 15_000, 'the forwarder ready (the last value read is its stderr)'),
    async stop(): Promise<number | null> {
      child.kill('SIGINT');
      return exited;
    },
  };
}

async function append(partnerId: string, count: number, tag: string): Promise<string[]> {
  const s = getStack();
  for (let n = 0; n < count; n++) {
    await s.dataSource.transaction((tx) => appendEvent(tx, { partnerId, environment: 'sandbox', type: 'order.created', data: { tag, n }, dedupeKey: `forward-test:${partnerId}:${tag}:${n}` }));
  }
  const rows = (await s.dataSource.query(`SELECT id FROM events WHERE partner_id = $1 AND data->>'tag' = $2 ORDER BY partner_seq`, [partnerId, tag])) as Array<{ id: string }>;
  return rows.map((r) => r.id);
}

const verified = (r: Received, secret = SECRET) => verifyWebhook<{ tag: string; n: number }>(r.body, r.headers as Record<string, string>, secret);

describe('partner CLI: events forward (a local receiver fed from GET /events)', () => {
  ownTemporal();
  it('from now on: forwards only new events, in order, signed exactly like a delivery, retrying a failed POST with back-off', async () => {
    const { partnerId, keyId, secret } = await newPartner({ scopes: ['webhook'] });
    const before = await append(partnerId, 3, 'before');
    let failedOnce = false;
    const receiver = await startReceiver((r) => {
      if (!failedOnce && JSON.parse(r.body).data.n === 1) {
        failedOnce = true;
        return 503;
      }
      return 200;
    });
    const run = forwarder([receiver.url], { keyId, secret }, { PARTNER_WEBHOOK_SECRET: SECRET });
    try {
      await run.ready();
      const after = await append(partnerId, 3, 'after');
      await waitFor(() => receiver.accepted.length, (n) => n >= 3, 30_000, 'three forwarded events');
      const events = receiver.accepted.map((r) => verified(r));
      assert.deepEqual(events.map((e) => e.id), after, 'the new events, in history order');
      assert.ok(!receiver.received.some((r) => before.includes(String(r.headers['x-service-event-id']))), 'nothing recorded before the start');
      assert.equal(receiver.received.length, 4, 'the failed POST was sent again');
      assert.equal(receiver.received[1].headers['x-service-event-id'], receiver.received[2].headers['x-service-event-id']);
      assert.ok(receiver.received[2].at - receiver.received[1].at >= 400, 'after a back-off');
      const body = JSON.parse(receiver.accepted[0].body) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body), ['id', 'type', 'created_at', 'data'], 'the body is the event, as a delivery carries it');
      assert.equal(receiver.accepted[0].headers['content-type'], 'application/json');
      await waitFor(() => (run.stderr().match(/-> 200/g) ?? []).length, (lines) => lines === 3, 5_000, 'a line per event');
      assert.match(run.stderr(), new RegExp(`${after[1]} order\\.created -> HTTP 503; retrying in`));
    } finally {
      const code = await run.stop();
      await receiver.close();
      assert.equal(code, 0);
      assert.match(run.stderr(), /resume with --cursor \S+/);
    }
  });

  it('--from-start replays the whole history; --secret overrides PARTNER_WEBHOOK_SECRET', async () => {
    const { partnerId, keyId, secret } = await newPartner({ scopes: ['webhook'] });
    const ids = await append(partnerId, 4, 'history');
    const receiver = await startReceiver();
    const other = `whsec_${randomUUID()}`;
    const run = forwarder([receiver.url, '--from-start', '--secret', other], { keyId, secret }, { PARTNER_WEBHOOK_SECRET: SECRET });
    try {
      await waitFor(() => receiver.accepted.length, (n) => n >= 4, 30_000, 'the history forwarded');
      assert.deepEqual(receiver.accepted.map((r) => verified(r, other).id), ids);
    } finally {
      await run.stop();
      await receiver.close();
    }
  });

  it('a credential without the webhook scope stops with the API error and a non-zero exit', async () => {
    const { keyId, secret } = await newPartner({ scopes: ['search'] });
    const run = forwarder(['http://127.0.0.1:9/hooks', '--secret', SECRET], { keyId, secret });
    assert.equal(await run.exited, 1);
    assert.match(run.stderr(), /GET \/events answered 403 forbidden/);
  });
});

describe('events forward: one retry loop, its own', () => {
  it('a 429 from GET /events is waited out by the forwarder (logged, each time), not first swallowed by the client\'s own retries', async function () {
    this.timeout(30_000);
    let asked = 0;
    const server = createServer((req, res) => {
      asked++;
      if (asked <= 2) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify({ error: { code: 'rate_limited', message: 'slow down' } }));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [], next_cursor: 'c1' }));
      }
    });
    const { url } = await listenOnLoopback(server);
    const lines: string[] = [];
    const stop = new AbortController();
    try {
      const forwarding = forwardEvents({
        client: new PartnerClient(url, { keyId: 'pk_test_x', secret: 'sk_test_x' }),
        url: 'http://127.0.0.1:1/unused',
        secret: SECRET,
        from: 'start',
        pollIntervalMs: 60_000,
        signal: stop.signal,
        log: (line) => lines.push(line),
      });
      await waitFor(() => asked, (n) => n >= 3, 15_000, 'the third GET /events');
      stop.abort();
      assert.equal(await forwarding, 'c1');
    } finally {
      server.close();
    }
    assert.equal(asked, 3, 'one request per wait: no retries stacked under the forwarder\'s');
    assert.equal(lines.filter((l) => /GET \/events answered 429; asking again in 1 s/.test(l)).length, 2, lines.join('\n'));
  });
});
