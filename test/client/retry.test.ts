import assert from 'node:assert/strict';
import http from 'node:http';
import { createClient, PartnerClient } from '../../sdk/src';
import { listenOnLoopback } from '../../src/main/loopback';
import { getStack, newPartner } from '../helpers/stack';

interface Seen {
  method: string;
  nonce: string;
  timestamp: string;
  signature: string;
  body: string;
}

/**
 * The SDK's clients send again, signed anew, the answers that ask for it (CONTRACT §1, docs/partners/signing.md):
 * a 503 (a part restarting, or the replay store restarted: "sign it again") and a 429, after
 * Retry-After; a POST's 503 only with an Idempotency-Key; a wait longer than the policy's, never.
 */
describe("the SDK's clients retry 503 and 429 by themselves, signed anew", () => {
  const credential = { keyId: 'pk_test_retry', secret: 'sk_test_retry' };
  let seen: Seen[];
  /** The answers the server gives, in turn (then 200). */
  let script: Array<{ status: number; retryAfter?: string }>;
  let baseUrl: string;
  let server: http.Server;

  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({
          method: req.method!,
          nonce: String(req.headers['x-service-nonce']),
          timestamp: String(req.headers['x-service-timestamp']),
          signature: String(req.headers['x-service-signature']),
          body: Buffer.concat(chunks).toString(),
        });
        const next = script.shift() ?? { status: 200 };
        res.writeHead(next.status, { 'content-type': 'application/json', ...(next.retryAfter ? { 'retry-after': next.retryAfter } : {}) });
        res.end(JSON.stringify(next.status === 200 ? { ok: true } : { error: { code: next.status === 429 ? 'rate_limited' : 'service_unavailable', message: 'sign it again' } }));
      });
    });
    baseUrl = (await listenOnLoopback(server)).url;
  });
  after(() => server.close());
  beforeEach(() => {
    seen = [];
    script = [];
  });

  it('PartnerClient: a GET answered 503 then 429 is sent again each time with a new nonce and signature, and returns the 200', async () => {
    script = [{ status: 503, retryAfter: '0' }, { status: 429, retryAfter: '0' }];
    const res = await new PartnerClient(baseUrl, credential).get('/api/partner/v1/pricing?domain=a.com');
    assert.equal(res.status, 200);
    assert.equal(seen.length, 3);
    assert.equal(new Set(seen.map((s) => s.nonce)).size, 3, 'signed anew each time');
    assert.equal(new Set(seen.map((s) => s.signature)).size, 3);
  });

  it('PartnerClient: a POST answered 503 is sent again only with an Idempotency-Key; a Retry-After past the policy is returned as it is', async () => {
    const client = new PartnerClient(baseUrl, credential);
    script = [{ status: 503, retryAfter: '0' }];
    assert.equal((await client.post('/api/partner/v1/orders', { quote_id: 'q' })).status, 503, 'whether it was acted on cannot be known');
    assert.equal(seen.length, 1);
    seen = [];
    script = [{ status: 503, retryAfter: '0' }];
    const keyed = await client.post('/api/partner/v1/orders', { quote_id: 'q' }, { headers: { 'Idempotency-Key': 'k-1' } });
    assert.equal(keyed.status, 200);
    assert.equal(seen.length, 2);
    assert.equal(seen[1]!.body, seen[0]!.body, 'the same body, signed anew');
    seen = [];
    script = [{ status: 429, retryAfter: '3600' }];
    assert.equal((await client.get('/api/partner/v1/pricing?domain=a.com')).status, 429, 'a quota’s hour is the caller’s to decide');
    assert.equal(seen.length, 1);
    seen = [];
    script = [{ status: 503, retryAfter: '0' }, { status: 503, retryAfter: '0' }, { status: 503, retryAfter: '0' }, { status: 503, retryAfter: '0' }];
    assert.equal((await client.get('/api/partner/v1/pricing?domain=a.com')).status, 503, 'at most three more sends');
    assert.equal(seen.length, 4);
  });

  it('the typed client (createClient): a 503 is sent again signed anew, body and all; retry: false returns it', async () => {
    script = [{ status: 503, retryAfter: '0' }];
    const client = createClient({ baseUrl, ...credential });
    const res = await client.PUT('/api/partner/webhooks', { body: { url: 'https://hooks.example.com/in' } as never });
    assert.equal(res.response.status, 200);
    assert.equal(seen.length, 2);
    assert.notEqual(seen[0]!.nonce, seen[1]!.nonce);
    assert.equal(seen[1]!.body, seen[0]!.body);
    seen = [];
    script = [{ status: 503, retryAfter: '0' }];
    const once = await createClient({ baseUrl, ...credential, retry: false }).PUT('/api/partner/webhooks', { body: { url: 'https://hooks.example.com/in' } as never });
    assert.equal(once.response.status, 503);
    assert.equal(seen.length, 1);
  });

  it('against the API: after the replay store restarts, a request is answered (the SDK signs again past the restart), never a 401', async () => {
    const { dataSource, baseUrl: api } = getStack();
    const { keyId, secret } = await newPartner();
    const client = new PartnerClient(api, { keyId, secret });
    // Crash recovery empties the replay store; deleting its epoch row is what it leaves behind.
    await dataSource.query('DELETE FROM admission_epoch');
    try {
      const res = await client.get('/api/partner/v1/pricing?domain=no-such-name-retry.com');
      assert.notEqual(res.status, 401, res.text);
      assert.ok([200, 404].includes(res.status), `${res.status} ${res.text}`);
    } finally {
      await dataSource.query(`UPDATE admission_epoch SET started_at = '-infinity'`);
    }
  });
});
