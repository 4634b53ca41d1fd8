import assert from 'node:assert/strict';
import { createApp } from '../../src/api/app';
import { getStack, listen, newPartner, ownTemporal } from '../helpers/stack';
import { rawExchange, rawRequest } from '../helpers/raw-request';

function assertErrorShape(res: { status: number; headers: Headers; body: unknown }, status: number, code: string) {
  assert.equal(res.status, status);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = res.body as { error: { code: string; message: string; request_id: string } };
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  assert.equal(res.headers.get('x-request-id'), body.error.request_id);
  // CONTRACT §14: a link into /docs for its code.
  assert.match((body.error as { doc_url?: string }).doc_url ?? '', new RegExp(`^https?://[^/]+/docs/errors#${code}$`));
}

describe('errors have one shape and every response an X-Request-Id (CONTRACT §2)', () => {
  ownTemporal();
  it('no API answer is kept by a cache on the way: Cache-Control no-store on answers and errors', async () => {
    const { client } = await newPartner();
    for (const res of [await client.get('/api/partner/v1/orders'), await client.get('/api/partner/v1/no-such-thing'), await rawRequest(getStack().baseUrl, 'GET', '/api/partner/v1/orders', {})]) {
      assert.equal(res.headers.get('cache-control'), 'no-store', `${res.status}`);
    }
  });

  it('an unknown route under /api/partner/v1 is 404 not_found', async () => {
    const { client } = await newPartner();
    assertErrorShape(await client.get('/api/partner/v1/no-such-thing'), 404, 'not_found');
  });

  it('an unknown route without credentials is 404 not_found too', async () => {
    const res = await rawRequest(getStack().baseUrl, 'GET', '/api/partner/v1/nothing/here', {});
    assertErrorShape(res, 404, 'not_found');
  });

  it('a method a known path does not have is 405 method_not_allowed with an Allow header', async () => {
    const { client } = await newPartner();
    const res = await client.request('DELETE', '/api/partner/v1/pricing?domain=academy.com');
    assertErrorShape(res, 405, 'method_not_allowed');
    assert.equal(res.headers.get('allow'), 'HEAD, GET');
    const patch = await rawRequest(getStack().baseUrl, 'PATCH', '/api/partner/v1/orders/ord_anything', {});
    assertErrorShape(patch, 405, 'method_not_allowed');
    assert.equal(patch.headers.get('allow'), 'HEAD, GET');
    const get = await rawRequest(getStack().baseUrl, 'GET', '/api/partner/webhooks', {});
    assertErrorShape(get, 405, 'method_not_allowed');
    assert.equal(get.headers.get('allow'), 'PUT');
  });

  it('a method the router does not know at all is 405 on a known path and 404 on an unknown one', async () => {
    const known = await rawRequest(getStack().baseUrl, 'PROPFIND', '/api/partner/v1/pricing', {});
    assertErrorShape(known, 405, 'method_not_allowed');
    assert.equal(known.headers.get('allow'), 'HEAD, GET');
    assertErrorShape(await rawRequest(getStack().baseUrl, 'PROPFIND', '/api/partner/v1/nothing/here', {}), 404, 'not_found');
    assertErrorShape(await rawRequest(getStack().baseUrl, 'DELETE', '/api/partner/v1/nothing/here', {}), 404, 'not_found');
  });

  it('a path is matched whatever its case and with a trailing slash, each resource by its own router (src/api/resource-routers.ts)', async () => {
    const { client } = await newPartner();
    for (const path of ['/API/Partner/V1/Pricing?domain=academy.com', '/api/partner/v1/pricing/?domain=academy.com', '/api/partner/v1/PRICING?domain=academy.com']) {
      const res = await client.get<{ domain: string }>(path);
      assert.equal(res.status, 200, path);
      assert.equal(res.body.domain, 'academy.com');
    }
    const order = await client.get('/api/partner/v1/Orders/ord_000000000000000000000000');
    assertErrorShape(order, 404, 'not_found');
    assertErrorShape(await client.get('/api/partner/v1//pricing?domain=academy.com'), 404, 'not_found');
    assertErrorShape(await client.get('/api/partner/v1/'), 404, 'not_found');
    assert.equal((await rawRequest(getStack().baseUrl, 'GET', '/HEALTHZ/', {})).status, 200);
    const options = await rawRequest(getStack().baseUrl, 'OPTIONS', '/api/partner/v1/orders', {});
    assert.equal(options.status, 200);
    assert.deepEqual(options.headers.get('allow')?.split(', ').sort(), ['GET', 'HEAD', 'POST']);
  });

  it('a malformed JSON body is 400 validation_error', async () => {
    const { client } = await newPartner();
    const path = '/api/partner/v1/domains/search?q=coffee';
    const body = '{"q": "coffee",';
    const res = await rawRequest(getStack().baseUrl, 'GET', path, { ...client.signHeaders('GET', path, body), 'content-type': 'application/json' }, body);
    assertErrorShape(res, 400, 'validation_error');
  });

  it('validation errors list each field with its issue', async () => {
    const { client } = await newPartner();
    const res = await client.get('/api/partner/v1/pricing?domain=not%20a%20domain');
    assertErrorShape(res, 400, 'validation_error');
    const details = (res.body as { error: { details: Array<{ field: string; issue: string }> } }).error.details;
    assert.deepEqual(details.map((d) => d.field), ['query.domain']);
  });

  it('a thrown exception is 500 internal_error with no stack trace or SQL', async () => {
    const failing = createApp({
      ...getStack().appDeps,
      search: {
        search: async () => {
          throw new Error('relation "domains" does not exist at Parser.parse (/srv/app/x.js:1:1)');
        },
      },
    });
    const baseUrl = await listen(failing);
    const { client } = await newPartner({ baseUrl });
    const res = await client.get('/api/partner/v1/domains/search?q=coffee');
    assertErrorShape(res, 500, 'internal_error');
    assert.doesNotMatch(res.text, /relation|Parser|\.js:|stack/);
  });

  it('successful answers carry X-Request-Id too', async () => {
    const { client } = await newPartner();
    const res = await client.get('/api/partner/v1/availability?domain=academy.com');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('x-request-id') ?? '', /^req_[0-9a-f]{24}$/);
  });

  it('health endpoints answer unsigned', async () => {
    const health = await fetch(`${getStack().baseUrl}/healthz`);
    assert.equal(health.status, 200);
    const ready = await fetch(`${getStack().baseUrl}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ready', checks: { database: 'ok', temporal: 'ok', search: 'ok' } });
  });

  it('readyz is 503 service_unavailable naming only the dependency that is down; the reason goes to the log with the request id', async () => {
    const reason = 'connect ECONNREFUSED 10.20.30.40:7233 (temporal-frontend.internal)';
    const baseUrl = await listen(createApp({ ...getStack().appDeps, temporalReady: () => Promise.reject(new Error(reason)) }));
    const res = await rawRequest(baseUrl, 'GET', '/readyz', {});
    assertErrorShape(res, 503, 'service_unavailable');
    assert.deepEqual((res.body as { error: { details: unknown } }).error.details, [{ field: 'temporal', issue: 'unavailable' }]);
    assert.doesNotMatch(res.text, /ECONNREFUSED|10\.20\.30\.40|internal/);
    const requestId = res.headers.get('x-request-id')!;
    assert.ok(getStack().logLines.some((line) => line.includes(requestId) && line.includes(reason)), 'the reason is logged under the request id');
  });

  it('a burst of /readyz calls runs one round of checks (anyone may call it)', async () => {
    let temporalChecks = 0;
    const baseUrl = await listen(createApp({ ...getStack().appDeps, temporalReady: async () => void temporalChecks++ }));
    const answers = await Promise.all(Array.from({ length: 50 }, () => rawRequest(baseUrl, 'GET', '/readyz', {})));
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [200]);
    assert.equal(temporalChecks, 1);
  });

  it('readyz names the database when Postgres fails, without its error text', async () => {
    const s = getStack();
    const failingDb = Object.create(s.dataSource, { query: { value: () => Promise.reject(new Error('password authentication failed for user "partner_api"')) } });
    const res = await rawRequest(await listen(createApp({ ...s.appDeps, dataSource: failingDb })), 'GET', '/readyz', {});
    assertErrorShape(res, 503, 'service_unavailable');
    assert.deepEqual((res.body as { error: { details: unknown } }).error.details, [{ field: 'database', issue: 'unavailable' }]);
    assert.doesNotMatch(res.text, /password|partner_api/);
  });

  it('logs carry the request id and never a secret, signature or full key', async () => {
    const { client, secret } = await newPartner();
    const res = await client.get('/api/partner/v1/availability?domain=academy.com');
    const requestId = res.headers.get('x-request-id')!;
    const log = getStack().logLines.join('\n');
    assert.ok(log.includes(requestId), 'the request is logged with its id');
    assert.ok(!log.includes(secret), 'no secret in logs');
    assert.ok(!log.includes(client.credential.keyId), 'no key id in logs');
    assert.ok(!/v1=[0-9a-f]{64}/.test(log), 'no signature in logs');
  });
});

describe('a request Node cannot parse as HTTP is answered in the same shape (CONTRACT §2)', () => {
  it('a raw non-ASCII byte in the URL, a space in a header name: 400; headers over the size limit: 431; each validation_error with X-Request-Id, then the connection closes', async () => {
    const { baseUrl } = getStack();
    const cases: Array<[string, Buffer, number, RegExp]> = [
      ['raw UTF-8 in the URL', Buffer.concat([Buffer.from('GET /api/partner/v1/domains/search?q=caf'), Buffer.from([0xc3, 0xa9]), Buffer.from(' HTTP/1.1\r\nHost: a\r\n\r\n')]), 400, /percent-encoded/],
      ['a space in a header name', Buffer.from('GET /api/partner/v1/orders HTTP/1.1\r\nHost: a\r\nX-Bad Header: y\r\n\r\n'), 400, /header name/],
      ['20 KB of headers', Buffer.from(`GET /api/partner/v1/orders HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`), 431, /headers are larger/],
    ];
    for (const [what, bytes, status, message] of cases) {
      const res = await rawExchange(baseUrl, bytes);
      assertErrorShape(res, status, 'validation_error');
      assert.match((res.body as { error: { message: string } }).error.message, message, what);
      assert.equal(res.headers.get('connection'), 'close', what);
    }
    // The server goes on answering.
    const healthy = await rawRequest(baseUrl, 'GET', '/healthz', {});
    assert.equal(healthy.status, 200);
  });
});
