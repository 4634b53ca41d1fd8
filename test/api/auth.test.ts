import assert from 'node:assert/strict';
import http from 'node:http';
import { createHmac, randomUUID } from 'node:crypto';
import { computeSignature } from '../../src/auth/signing';
import { PartnerClient } from '../../src/client/partner-client';
import { createApp } from '../../src/api/app';
import { getStack, listen, newPartner, ownTemporal } from '../helpers/stack';
import { rawRequest } from '../helpers/raw-request';

const PRICING = '/api/partner/v1/pricing?domain=academy.com';

function expectError(res: { status: number; body: unknown; headers: Headers }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  const body = res.body as { error: { code: string; request_id: string; message: string } };
  assert.equal(body.error.code, code);
  assert.match(body.error.request_id, /^req_/);
  assert.equal(res.headers.get('x-request-id'), body.error.request_id);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
}

describe('authentication outcomes over HTTP (CONTRACT §1)', () => {
  ownTemporal();
  it('a request without X-Service-Key-Id is 401 missing_credentials', async () => {
    const res = await fetch(getStack().baseUrl + PRICING);
    expectError({ status: res.status, body: await res.json(), headers: res.headers }, 401, 'missing_credentials');
  });

  it('the key id is resolved before the body is read: an unknown key announcing a 5 MB body is answered 401 at once, its body never waited for', async () => {
    const url = new URL(getStack().baseUrl + '/api/partner/v1/quotes');
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': String(5 * 1024 * 1024), 'X-Service-Key-Id': 'pk_test_madeupmadeupmadeup' } }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.setTimeout(5_000, () => reject(new Error('no answer within 5 s: the server waited for the body')));
      req.flushHeaders(); // the headers only: not one byte of the body is sent
    });
    assert.equal(answer.status, 401, answer.body);
    assert.equal((JSON.parse(answer.body) as { error: { code: string } }).error.code, 'invalid_signature');
  });

  it('without X-Service-Key-Id the body is not looked at: an oversized or gzip body is 401 missing_credentials too', async () => {
    const big = await fetch(getStack().baseUrl + '/api/partner/v1/quotes', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: 'x'.repeat(300 * 1024) });
    expectError({ status: big.status, body: await big.json(), headers: big.headers }, 401, 'missing_credentials');
    const gzip = await fetch(getStack().baseUrl + '/api/partner/v1/quotes', { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, body: '{}' });
    expectError({ status: gzip.status, body: await gzip.json(), headers: gzip.headers }, 401, 'missing_credentials');
  });

  it('an unknown key id is 401 invalid_signature', async () => {
    const { secret } = await newPartner();
    const stranger = new PartnerClient(getStack().baseUrl, { keyId: 'pk_test_000000000000000000000000', secret });
    expectError(await stranger.get(PRICING), 401, 'invalid_signature');
  });

  it('a correctly signed request is answered', async () => {
    const { client } = await newPartner();
    const res = await client.get(PRICING);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('x-request-id') ?? '', /^req_/);
  });

  it('a timestamp 299 s away either way is accepted, 301 s away is 401', async () => {
    // The server's clock is pinned so that the boundary is exact, whatever the test's timing.
    const now = Math.floor(Date.now() / 1000);
    const pinned = await listen(createApp({ ...getStack().appDeps, now: () => now * 1000 + 999 }));
    const { client } = await newPartner({ baseUrl: pinned });
    assert.equal((await client.get(PRICING, { timestamp: String(now - 300) })).status, 200);
    assert.equal((await client.get(PRICING, { timestamp: String(now + 300) })).status, 200);
    assert.equal((await client.get(PRICING, { timestamp: String(now - 299) })).status, 200);
    assert.equal((await client.get(PRICING, { timestamp: String(now + 299) })).status, 200);
    expectError(await client.get(PRICING, { timestamp: String(now - 301) }), 401, 'invalid_signature');
    expectError(await client.get(PRICING, { timestamp: String(now + 301) }), 401, 'invalid_signature');
  });

  it('a malformed timestamp or nonce is 401 invalid_signature', async () => {
    const { client } = await newPartner();
    expectError(await client.get(PRICING, { timestamp: 'yesterday' }), 401, 'invalid_signature');
    expectError(await client.get(PRICING, { nonce: 'not-a-uuid' }), 401, 'invalid_signature');
    // A UUID, but not version 4.
    expectError(await client.get(PRICING, { nonce: '6ba7b810-9dad-11d1-80b4-00c04fd430c8' }), 401, 'invalid_signature');
  });

  it('a reused nonce is 401 invalid_signature', async () => {
    const { client } = await newPartner();
    const nonce = randomUUID();
    assert.equal((await client.get(PRICING, { nonce })).status, 200);
    const replay = await client.get(PRICING, { nonce });
    expectError(replay, 401, 'invalid_signature');
    assert.match((replay.body as { error: { message: string } }).error.message, /nonce/);
  });

  it('a request rejected for its signature does not consume its nonce', async () => {
    const { client, keyId } = await newPartner();
    const nonce = randomUUID();
    const forger = new PartnerClient(getStack().baseUrl, { keyId, secret: 'sk_test_forged' });
    expectError(await forger.get(PRICING, { nonce }), 401, 'invalid_signature');
    assert.equal((await client.get(PRICING, { nonce })).status, 200);
  });

  it('after crash recovery empties the replay store, a request signed before it restarted is 503 with Retry-After (sign again), never a credential error; one signed since is answered', async () => {
    // Crash recovery empties the unlogged nonce table and, with it, admission_epoch; deleting the row is what it leaves behind.
    const { dataSource } = getStack();
    const { client } = await newPartner();
    await dataSource.query('DELETE FROM admission_epoch');
    try {
      const signedBefore = String(Math.floor(Date.now() / 1000) - 1);
      const refused = await client.get(PRICING, { timestamp: signedBefore });
      expectError(refused, 503, 'service_unavailable');
      assert.equal(refused.headers.get('retry-after'), '1');
      assert.match((refused.body as { error: { message: string } }).error.message, /restarted.*sign it again/);
      const [{ startedAt }] = (await dataSource.query('SELECT extract(epoch FROM started_at)::float8 AS "startedAt" FROM admission_epoch')) as Array<{ startedAt: number }>;
      // A wait on the clock, which the epoch is made of: until 50 ms into the second after the epoch began.
      const pastTheEpochMs = Math.max(0, (Math.ceil(startedAt) - Date.now() / 1000) * 1000 + 50);
      await new Promise((r) => setTimeout(r, pastTheEpochMs));
      assert.equal((await client.get(PRICING)).status, 200, 'signed after the epoch second');
    } finally {
      // Back to "nothing forgotten", so later tests may sign with old timestamps again.
      await dataSource.query(`UPDATE admission_epoch SET started_at = '-infinity'`);
    }
  });

  it('a body other than the one signed is 401 invalid_signature', async () => {
    const { client } = await newPartner();
    const path = '/api/partner/v1/domains/search?q=coffee';
    const headers = client.signHeaders('GET', path, '{"a":1}');
    const res = await rawRequest(getStack().baseUrl, 'GET', path, { ...headers, 'content-type': 'application/json' }, '{"a":2}');
    expectError(res, 401, 'invalid_signature');
  });

  it('the query is signed in canonical order: parameters reordered in the URL still verify, a changed value does not', async () => {
    const { client } = await newPartner();
    const signed = client.signHeaders('GET', '/api/partner/v1/availability?domain=academy.com&x=1');
    const reordered = await rawRequest(getStack().baseUrl, 'GET', '/api/partner/v1/availability?x=1&domain=academy.com', signed);
    assert.equal(reordered.status, 200, JSON.stringify(reordered.body));
    const other = client.signHeaders('GET', '/api/partner/v1/availability?domain=academy.com&x=1');
    const tampered = await rawRequest(getStack().baseUrl, 'GET', '/api/partner/v1/availability?domain=academy.co&x=1', other);
    expectError(tampered, 401, 'invalid_signature');
  });

  it('a signature over the query as written rather than canonically sorted is 401', async () => {
    const { keyId, secret } = await newPartner();
    const timestamp = String(Math.floor(Date.now() / 1000));
    const nonce = randomUUID();
    // Sign "x=1&domain=…" without sorting: the canonical string differs from the server's.
    const lines = ['v1', keyId, timestamp, nonce, 'GET', '/api/partner/v1/availability', 'x=1&domain=academy.com', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'];
    const wrong = createHmac('sha256', secret).update(lines.join('\n')).digest('hex');
    assert.notEqual(wrong, computeSignature(secret, { keyId, timestamp, nonce, method: 'GET', path: '/api/partner/v1/availability', query: [['x', '1'], ['domain', 'academy.com']], body: '' }));
    const res = await rawRequest(getStack().baseUrl, 'GET', '/api/partner/v1/availability?x=1&domain=academy.com', {
      'X-Service-Key-Id': keyId,
      'X-Service-Timestamp': timestamp,
      'X-Service-Nonce': nonce,
      'X-Service-Signature': `v1=${wrong}`,
    });
    expectError(res, 401, 'invalid_signature');
  });

  it('a signature made with the wrong secret is 401 invalid_signature', async () => {
    const { keyId } = await newPartner();
    const wrong = new PartnerClient(getStack().baseUrl, { keyId, secret: 'sk_test_' + 'a'.repeat(64) });
    expectError(await wrong.get(PRICING), 401, 'invalid_signature');
  });

  it('a revoked credential is 401 invalid_signature from the moment it is revoked', async () => {
    const { client, keyId } = await newPartner();
    assert.equal((await client.get(PRICING)).status, 200);
    await getStack().credentials.revoke(keyId);
    expectError(await client.get(PRICING), 401, 'invalid_signature');
  });

  it('a key id whose prefix does not match its environment is rejected', async () => {
    const { keyId, secret } = await newPartner({ environment: 'sandbox' });
    const swapped = new PartnerClient(getStack().baseUrl, { keyId: keyId.replace('pk_test_', 'pk_live_'), secret });
    expectError(await swapped.get(PRICING), 401, 'invalid_signature');
  });
});
