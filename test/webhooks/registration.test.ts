import os from 'node:os';
import { lookup } from 'node:dns/promises';
import assert from 'node:assert/strict';
import { createApp } from '../../src/api/app';
import { PartnerClient } from '../../src/client/partner-client';
import { getStack, listen, newPartner, ownTemporal } from '../helpers/stack';

type Err = { error: { code: string; message: string; details?: Array<{ field: string; issue: string }> } };
const SECRET = 'whsec_dGVzdC1yZWdpc3RyYXRpb24tc2VjcmV0';

describe('webhook registration (PUT /api/partner/webhooks)', () => {
  ownTemporal();
  it('registers an endpoint and answers 200 { url, enabled, updated_at }; registering again replaces it', async () => {
    const { client } = await newPartner({ scopes: ['webhook'] });
    const first = await client.request<{ url: string; enabled: boolean; updated_at: string }>('PUT', '/api/partner/webhooks', { body: { url: 'http://127.0.0.1:9/hooks', secret: SECRET } });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.url, 'http://127.0.0.1:9/hooks');
    assert.equal(first.body.enabled, true);
    assert.ok(!Number.isNaN(Date.parse(first.body.updated_at)));
    const second = await client.request<{ url: string }>('PUT', '/api/partner/webhooks', { body: { url: 'https://93.184.216.34/other', secret: SECRET } });
    assert.equal(second.body.url, 'https://93.184.216.34/other');
    const rows = (await getStack().dataSource.query('SELECT w.url, w.secret_sealed FROM webhook_endpoints w JOIN credentials c ON c.partner_id = w.partner_id WHERE c.key_id = $1', [client.credential.keyId])) as Array<{ url: string; secret_sealed: Buffer }>;
    assert.equal(rows.length, 1);
    assert.ok(!rows[0].secret_sealed.toString('latin1').includes(SECRET), 'the secret is stored sealed');
  });

  it('sandbox and live each keep their own endpoint', async () => {
    const { partnerId } = await newPartner({ scopes: ['webhook'], name: `both-envs-${Date.now()}` });
    const s = getStack();
    const live = await s.credentials.issue({ partnerId, environment: 'live', scopes: ['webhook'], rateLimitPerSecond: 1000 });
    const sandbox = await s.credentials.issue({ partnerId, environment: 'sandbox', scopes: ['webhook'], rateLimitPerSecond: 1000 });
    await new PartnerClient(s.baseUrl, live).request('PUT', '/api/partner/webhooks', { body: { url: 'https://93.184.216.34/live', secret: SECRET } });
    await new PartnerClient(s.baseUrl, sandbox).request('PUT', '/api/partner/webhooks', { body: { url: 'http://localhost:4000/sandbox', secret: SECRET } });
    const rows = (await s.dataSource.query('SELECT environment, url FROM webhook_endpoints WHERE partner_id = $1 ORDER BY environment', [partnerId])) as Array<{ environment: string; url: string }>;
    assert.deepEqual(rows, [
      { environment: 'live', url: 'https://93.184.216.34/live' },
      { environment: 'sandbox', url: 'http://localhost:4000/sandbox' },
    ]);
  });

  it('rejects malformed URLs, empty or malformed secrets with 400 validation_error (a missing one is generated: test/webhooks/standard-webhooks.test.ts); a short secret only for live', async () => {
    const { client, partnerId } = await newPartner({ scopes: ['webhook'] });
    for (const body of [
      { url: 'not a url', secret: SECRET },
      { url: '/relative/path', secret: SECRET },
      { url: 'ftp://93.184.216.34/x', secret: SECRET },
      { url: 'https://user:pass@93.184.216.34/x', secret: SECRET },
      { url: 'https://93.184.216.34/x', secret: '' },
      { url: 'https://93.184.216.34/x', secret: 'x'.repeat(257) },
      { url: 'https://93.184.216.34/x', secret: 'whsec_not-base64' },
    ]) {
      const res = await client.request<Err>('PUT', '/api/partner/webhooks', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, 'validation_error');
    }
    // The contract sets no minimum: sandbox takes a short secret; live asks for 16 characters.
    assert.equal((await client.request('PUT', '/api/partner/webhooks', { body: { url: 'https://93.184.216.34/x', secret: 'short' } })).status, 200);
    const live = new PartnerClient(getStack().baseUrl, await getStack().credentials.issue({ partnerId, environment: 'live', scopes: ['webhook'], rateLimitPerSecond: 1000 }));
    const weak = await live.request<Err>('PUT', '/api/partner/webhooks', { body: { url: 'https://93.184.216.34/x', secret: 'short' } });
    assert.deepEqual([weak.status, weak.body.error.code, weak.body.error.details?.[0]?.field], [400, 'validation_error', 'body.secret']);
  });

  describe('SSRF guards for live credentials: every forbidden address class is refused', () => {
    const cases: Array<[string, string]> = [
      ['plain http', 'http://93.184.216.34/hooks'],
      ['loopback IPv4', 'https://127.0.0.1/hooks'],
      ['loopback IPv6', 'https://[::1]/hooks'],
      ['localhost by name', 'https://localhost/hooks'],
      ['private 10/8', 'https://10.0.0.5/hooks'],
      ['private 172.16/12', 'https://172.20.1.1/hooks'],
      ['private 192.168/16', 'https://192.168.0.10/hooks'],
      ['link-local / cloud metadata', 'https://169.254.169.254/latest/meta-data'],
      ['IPv6 link-local', 'https://[fe80::1]/hooks'],
      ['IPv6 unique-local', 'https://[fd00:ec2::254]/hooks'],
      ['IPv4-mapped private', 'https://[::ffff:10.0.0.1]/hooks'],
      ['carrier-grade NAT', 'https://100.64.0.1/hooks'],
      ['unspecified', 'https://0.0.0.0/hooks'],
      ['multicast', 'https://224.0.0.1/hooks'],
    ];
    for (const [label, url] of cases) {
      it(`${label}: ${url}`, async () => {
        const { client } = await newPartner({ environment: 'live', scopes: ['webhook'] });
        const res = await client.request<Err>('PUT', '/api/partner/webhooks', { body: { url, secret: SECRET } });
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.error.details?.[0].field, 'body.url');
      });
    }

    it('a public https address is accepted for live', async () => {
      const { client } = await newPartner({ environment: 'live', scopes: ['webhook'] });
      assert.equal((await client.request('PUT', '/api/partner/webhooks', { body: { url: 'https://93.184.216.34/hooks', secret: SECRET } })).status, 200);
    });

    it('sandbox may use loopback where the operator allows it (the test stack does), but never private or metadata addresses', async () => {
      const { client } = await newPartner({ environment: 'sandbox', scopes: ['webhook'] });
      assert.equal((await client.request('PUT', '/api/partner/webhooks', { body: { url: 'http://127.0.0.1:8080/hooks', secret: SECRET } })).status, 200);
      assert.equal((await client.request('PUT', '/api/partner/webhooks', { body: { url: 'http://10.0.0.5/hooks', secret: SECRET } })).status, 400);
      assert.equal((await client.request('PUT', '/api/partner/webhooks', { body: { url: 'http://169.254.169.254/latest', secret: SECRET } })).status, 400);
    });
  });

  describe('with WEBHOOK_ALLOW_LOOPBACK off (the default, and docker-compose)', () => {
    let baseUrl: string;
    before(async () => {
      const s = getStack();
      baseUrl = await listen(createApp({ ...s.appDeps, config: { ...s.appDeps.config, webhooks: { allowLoopback: false } } }));
    });

    for (const url of ['http://127.0.0.1:8080/hooks', 'http://[::1]:8080/hooks', 'http://localhost:8080/hooks', 'http://hooks.localhost:8080/hooks']) {
      it(`a sandbox loopback URL is 400 validation_error: ${url}`, async () => {
        const { client } = await newPartner({ environment: 'sandbox', scopes: ['webhook'], baseUrl });
        const res = await client.request<Err>('PUT', '/api/partner/webhooks', { body: { url, secret: SECRET } });
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.error.code, 'validation_error');
        assert.equal(res.body.error.details?.[0].field, 'body.url');
        assert.equal(await countEndpoints(client.credential.keyId), 0, 'nothing registered');
      });
    }

    for (const url of ['http://[fec0::1]/hooks', 'http://[100::1]/hooks', 'http://[2001:db8::1]/hooks', 'http://192.0.2.1/hooks', 'http://[64:ff9b::a00:1]/hooks']) {
      it(`only public unicast addresses: ${url} is 400 validation_error`, async () => {
        const { client } = await newPartner({ environment: 'sandbox', scopes: ['webhook'], baseUrl });
        const res = await client.request<Err>('PUT', '/api/partner/webhooks', { body: { url, secret: SECRET } });
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.error.details?.[0].field, 'body.url');
      });
    }

    it('a name that resolves to a non-public address is refused without saying which address (no DNS oracle for internal names)', async () => {
      const { client } = await newPartner({ environment: 'sandbox', scopes: ['webhook'], baseUrl });
      const host = os.hostname();
      const resolved = (await lookup(host, { all: true })).map((a) => a.address);
      const res = await client.request<Err>('PUT', '/api/partner/webhooks', { body: { url: `http://${host}:8080/hooks`, secret: SECRET } });
      assert.equal(res.status, 400, res.text);
      // One answer for an internal name and for a name that does not resolve at all: no oracle
      // for which names exist inside the deployment (postgres, temporal, …).
      const unknown = await client.request<Err>('PUT', '/api/partner/webhooks', { body: { url: 'http://no-such-name.invalid:8080/hooks', secret: SECRET } });
      assert.equal(unknown.status, 400, unknown.text);
      const sayOf = (r: typeof res, name: string) => r.body.error.message.replace(name, '<host>');
      assert.equal(sayOf(res, host), sayOf(unknown, 'no-such-name.invalid'), 'the same message');
      assert.match(res.body.error.message, /does not resolve to a public address/);
      // The message and details (doc_url names this test server's own address, not the resolved one).
      const said = JSON.stringify({ message: res.body.error.message, details: res.body.error.details });
      for (const address of resolved) assert.ok(!said.includes(address), `${address} is not named: ${said}`);
    });

    it('a sandbox public URL is still accepted', async () => {
      const { client } = await newPartner({ environment: 'sandbox', scopes: ['webhook'], baseUrl });
      assert.equal((await client.request('PUT', '/api/partner/webhooks', { body: { url: 'http://93.184.216.34/hooks', secret: SECRET } })).status, 200);
    });
  });
});

async function countEndpoints(keyId: string): Promise<number> {
  const rows = (await getStack().dataSource.query('SELECT 1 FROM webhook_endpoints w JOIN credentials c ON c.partner_id = w.partner_id WHERE c.key_id = $1', [keyId])) as unknown[];
  return rows.length;
}
