import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createApp, partnerRoutes } from '../../src/api/app';
import { defineRoute } from '../../src/api/route';
import { z } from '../../src/api/schemas';
import { SCOPES, type Scope } from '../../src/auth/scopes';
import { getStack, listen, newPartner, ownTemporal } from '../helpers/stack';

/** The spec's endpoint table, for the routes that exist so far. */
const SPEC_SCOPES: Record<string, Scope[]> = {
  'GET /api/partner/v1/domains/search': ['search'],
  'GET /api/partner/v1/domains/{name}': ['search'],
  'GET /api/partner/v1/availability': ['search'],
  'GET /api/partner/v1/pricing': ['search'],
  'POST /api/partner/v1/quotes': ['buy'],
  'POST /api/partner/v1/orders': ['buy'],
  'GET /api/partner/v1/orders': ['search', 'buy'],
  'GET /api/partner/v1/orders/{public_id}': ['search', 'buy'],
  'POST /api/partner/v1/refunds': ['buy'],
  'POST /api/partner/v1/checkout-session': ['embed'],
  'GET /api/partner/v1/checkout-session/{session_id}': ['embed'],
  'POST /api/partner/v1/links': ['refer'],
  'GET /api/partner/v1/links': ['refer'],
  'GET /api/partner/v1/me/clicks': ['report'],
  'GET /api/partner/v1/me/sales': ['report'],
  'GET /api/partner/v1/me/commissions': ['report'],
  'GET /api/partner/v1/me/payouts': ['report'],
  'GET /api/partner/v1/analytics': ['report'],
  'GET /api/partner/v1/brokerage/eligibility': ['broker'],
  'POST /api/partner/v1/brokerage': ['broker'],
  'GET /api/partner/v1/brokerage/{case_id}': ['broker'],
  'GET /api/partner/v1/brokerage': ['report'],
  'GET /api/partner/v1/settlements': ['buy'],
  'GET /api/partner/v1/transactions': ['report'],
  'GET /api/partner/v1/payouts': ['report'],
  'PUT /api/partner/webhooks': ['webhook'],
  // CONTRACT §14: the scope that reads the object named (each checked by the route: test/sandbox/fast-forward.test.ts).
  'POST /api/partner/v1/sandbox/fast-forward': ['buy', 'embed', 'broker', 'report'],
  'GET /api/partner/v1/events': ['webhook'],
  // CONTRACT §16: any sandbox credential of the partner asks for live access.
  'POST /api/partner/v1/live-access': ['search', 'embed', 'buy', 'broker', 'refer', 'report', 'webhook'],
};

describe('scopes (spec "Scopes")', () => {
  ownTemporal();
  it('every route in the route table carries the scope the spec gives it', () => {
    const routes = partnerRoutes(getStack().appDeps);
    for (const route of routes) {
      const key = `${route.method.toUpperCase()} ${route.path}`;
      assert.ok(SPEC_SCOPES[key], `${key} is in the spec's table`);
      assert.deepEqual([...route.scopes].sort(), [...SPEC_SCOPES[key]].sort(), key);
    }
  });

  describe('each scope allows its holder and denies everyone else with 403 forbidden', () => {
    let baseUrl: string;
    before(async () => {
      // One probe route per scope, mounted on the real middleware chain.
      const probes = SCOPES.map((scope) =>
        defineRoute({
          operationId: `probe_${scope}`,
          method: 'get',
          path: `/api/partner/v1/probe/${scope}`,
          scopes: [scope],
          tag: 'Probe',
          summary: scope,
          response: { status: 200, description: 'ok', schema: z.object({ scope: z.string() }) },
          errors: [],
          handler: async () => ({ body: { scope } }),
        }),
      );
      baseUrl = await listen(createApp(getStack().appDeps, probes));
    });

    for (const scope of SCOPES) {
      it(`${scope}: allowed with it, 403 without it`, async () => {
        const holder = await newPartner({ scopes: [scope], baseUrl });
        const allowed = await holder.client.get(`/api/partner/v1/probe/${scope}`);
        assert.equal(allowed.status, 200);
        assert.deepEqual(allowed.body, { scope });

        const others = SCOPES.filter((s) => s !== scope);
        const outsider = await newPartner({ scopes: others, baseUrl });
        const denied = await outsider.client.get(`/api/partner/v1/probe/${scope}`);
        assert.equal(denied.status, 403);
        assert.equal((denied.body as { error: { code: string } }).error.code, 'forbidden');
      });
    }
  });

  it('a credential without the search scope cannot search', async () => {
    const { client } = await newPartner({ scopes: ['buy', 'report'] });
    const res = await client.get('/api/partner/v1/domains/search?q=coffee');
    assert.equal(res.status, 403);
  });

  describe('a request refused with 403 changes nothing (CONTRACT §1)', () => {
    const ALLOWED = '/api/partner/v1/availability?domain=academy.com';
    const FORBIDDEN = '/api/partner/v1/events';

    const nonces = async (keyId: string) =>
      Number((await getStack().dataSource.createQueryBuilder().select('count(*)', 'n').from('request_nonces', 'r').where('r.key_id = :keyId', { keyId }).getRawOne<{ n: string }>())!.n);
    const bucket = (keyId: string) =>
      getStack().dataSource.createQueryBuilder().select(['b.tat AS tat']).from('rate_limit_buckets', 'b').where('b.key_id = :keyId', { keyId }).getRawOne();

    it('no nonce recorded and no rate-limit token taken', async () => {
      const { client, keyId } = await newPartner({ scopes: ['search'] });
      assert.equal((await client.get(ALLOWED)).status, 200);
      const noncesBefore = await nonces(keyId);
      const bucketBefore = await bucket(keyId);
      const denied = await client.get(FORBIDDEN);
      assert.equal(denied.status, 403);
      assert.equal(await nonces(keyId), noncesBefore, 'the nonce was not recorded');
      assert.deepEqual(await bucket(keyId), bucketBefore, 'the rate-limit bucket is untouched');
    });

    it("a credential's first request, refused, leaves no bucket and no nonce behind; its nonce stays usable", async () => {
      const { client, keyId } = await newPartner({ scopes: ['search'] });
      const nonce = randomUUID();
      assert.equal((await client.get(FORBIDDEN, { nonce })).status, 403);
      assert.equal(await nonces(keyId), 0);
      assert.equal(await bucket(keyId), undefined);
      assert.equal((await client.get(ALLOWED, { nonce })).status, 200, 'the same nonce, on a request the credential may make');
    });

    it('a replayed nonce is still 401 before a missing scope is 403', async () => {
      const { client } = await newPartner({ scopes: ['search'] });
      const nonce = randomUUID();
      assert.equal((await client.get(ALLOWED, { nonce })).status, 200);
      const replay = await client.get(FORBIDDEN, { nonce });
      assert.equal(replay.status, 401);
      assert.equal((replay.body as { error: { code: string } }).error.code, 'invalid_signature');
    });

    it('over the rate limit, a forbidden request is 403, not 429 (scope is checked first)', async () => {
      const { client } = await newPartner({ scopes: ['search'], rateLimitPerSecond: 1 });
      for (let i = 0; i < 3; i++) await client.get(ALLOWED);
      assert.equal((await client.get(ALLOWED)).status, 429);
      assert.equal((await client.get(FORBIDDEN)).status, 403);
    });
  });
});
