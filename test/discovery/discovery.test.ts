import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { In } from 'typeorm';
import { Domain } from '../../src/db/entities/domain';
import { importInventory, parseInventoryCsv } from '../../src/discovery/inventory';
import { waitFor } from '../helpers/wait';
import { getStack, newPartner } from '../helpers/stack';

type Hit = { name: string; available: boolean; buy_now_price_cents: number; currency: string; score: number };

describe('discovery over the sandbox inventory (CONTRACT §5)', () => {
  let client: Awaited<ReturnType<typeof newPartner>>['client'];
  before(async () => {
    ({ client } = await newPartner({ scopes: ['search'] }));
  });

  it('search answers at most 5 names, best first, with scores in [0, 1]', async () => {
    const res = await client.get<{ data: Hit[] }>('/api/partner/v1/domains/search?q=coffee');
    assert.equal(res.status, 200);
    const hits = res.body.data;
    assert.ok(hits.length > 0 && hits.length <= 5);
    for (const hit of hits) {
      assert.match(hit.name, /coffee/);
      assert.equal(hit.currency, 'USD');
      assert.ok(Number.isInteger(hit.buy_now_price_cents));
      assert.ok(hit.score >= 0 && hit.score <= 1);
    }
    const scores = hits.map((h) => h.score);
    assert.deepEqual(scores, [...scores].sort((a, b) => b - a));
  });

  it('an exact name ranks first', async () => {
    const res = await client.get<{ data: Hit[] }>('/api/partner/v1/domains/search?q=academy');
    assert.equal(res.body.data[0].name.split('.')[0], 'academy');
  });

  it('a typo still finds the intended word', async () => {
    const res = await client.get<{ data: Hit[] }>('/api/partner/v1/domains/search?q=cofee');
    assert.ok(res.body.data.some((h) => h.name.includes('coffee')), JSON.stringify(res.body));
  });

  it('a missing, empty or over-long q is 400 validation_error', async () => {
    for (const query of ['', '?q=', '?q=%20%20', `?q=${'a'.repeat(201)}`]) {
      const res = await client.get(`/api/partner/v1/domains/search${query}`);
      assert.equal(res.status, 400, query);
      assert.equal((res.body as { error: { code: string } }).error.code, 'validation_error');
    }
  });

  it('one domain: price, availability and metadata, matched case-insensitively and answered in lower case', async () => {
    const res = await client.get('/api/partner/v1/domains/Academy.COM');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      name: 'academy.com',
      available: true,
      buy_now_price_cents: 2300000,
      floor_price_cents: 1495000,
      currency: 'USD',
      metadata: { tld: 'com', category: 'education', registered_year: 2004, active_site: false },
    });
  });

  it('availability of a listed domain gives its price', async () => {
    const res = await client.get('/api/partner/v1/availability?domain=ACADEMY.com');
    assert.deepEqual(res.body, { domain: 'academy.com', available: true, buy_now_price_cents: 2300000, currency: 'USD' });
  });

  it('availability of an unlisted domain is 200 with available false and a null price', async () => {
    const unlisted = parseInventoryCsv(readFileSync(path.join(getStack().config.projectRoot, 'data', 'sandbox-domains.csv'), 'utf8')).find((r) => r.status === 'unlisted')!;
    for (const name of ['never-heard-of-it.com', unlisted.name]) {
      const res = await client.get(`/api/partner/v1/availability?domain=${name}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { domain: name, available: false, buy_now_price_cents: null, currency: null });
    }
  });

  it('an internationalised name is taken in its ASCII form and answered in it; one that has none is 400', async () => {
    const res = await client.get(`/api/partner/v1/availability?domain=${encodeURIComponent('MÜNCHEN.de')}`);
    assert.equal(res.status, 200, res.text);
    assert.equal((res.body as { domain: string }).domain, 'xn--mnchen-3ya.de');
    const rf = await client.get(`/api/partner/v1/availability?domain=${encodeURIComponent('пример.рф')}`);
    assert.equal((rf.body as { domain: string }).domain, 'xn--e1afmkfd.xn--p1ai', 'an internationalised TLD too');
    // Not read as a URL's host: a path, query or tab after the name is no name, not the name before it.
    for (const bad of ['bad name.com', 'academy.com/é', 'academy.com?é', 'academy.com\té']) {
      assert.equal((await client.get(`/api/partner/v1/availability?domain=${encodeURIComponent(bad)}`)).status, 400, bad);
    }
  });

  it('pricing gives buy-now and floor price, and 404 not_found for an unlisted domain', async () => {
    const ok = await client.get('/api/partner/v1/pricing?domain=academy.com');
    assert.deepEqual(ok.body, { domain: 'academy.com', buy_now_price_cents: 2300000, floor_price_cents: 1495000, currency: 'USD' });
    const missing = await client.get('/api/partner/v1/pricing?domain=never-heard-of-it.com');
    assert.equal(missing.status, 404);
    assert.equal((missing.body as { error: { code: string } }).error.code, 'not_found');
    const noDomain = await client.get('/api/partner/v1/pricing');
    assert.equal(noDomain.status, 400);
  });

  it('an unlisted name is 404 on the domain endpoint', async () => {
    const res = await client.get('/api/partner/v1/domains/never-heard-of-it.com');
    assert.equal(res.status, 404);
  });
});

describe('sandbox and live are apart', () => {
  before(async () => {
    await importInventory(getStack().dataSource, 'live', [
      { name: 'livecoffeeroasters.com', category: 'food-and-drink', buy_now_price_cents: 500000, floor_price_cents: 400000, currency: 'USD', status: 'listed', active_site: false, registered_year: 2010 },
    ]);
  });

  it('a live credential sees only the live inventory', async () => {
    const { client } = await newPartner({ environment: 'live', scopes: ['search'] });
    assert.match(client.credential.keyId, /^pk_live_/);
    // Search follows the inventory through the change feed: the import shows once its notification is heard.
    const found = async () => (await client.get<{ data: Hit[] }>('/api/partner/v1/domains/search?q=coffee')).body.data.map((h) => h.name);
    await waitFor(found, (names) => names.includes('livecoffeeroasters.com'), 1_000, 'the live import in search');
    // Whatever other files listed in live may show too: every hit is a name of the live inventory, on the market.
    const hits = await found();
    const live = await getStack().dataSource.getRepository(Domain).count({ where: { environment: 'live', name: In(hits), status: In(['listed', 'reserved']) } });
    assert.equal(live, hits.length, JSON.stringify(hits));
    assert.equal((await client.get('/api/partner/v1/pricing?domain=academy.com')).status, 404);
    assert.equal((await client.get('/api/partner/v1/pricing?domain=livecoffeeroasters.com')).status, 200);
  });

  it('a sandbox credential never sees a live name', async () => {
    const { client } = await newPartner({ environment: 'sandbox', scopes: ['search'] });
    const search = await client.get<{ data: Hit[] }>('/api/partner/v1/domains/search?q=livecoffeeroasters');
    assert.ok(!search.body.data.some((h) => h.name === 'livecoffeeroasters.com'));
    const availability = await client.get('/api/partner/v1/availability?domain=livecoffeeroasters.com');
    assert.equal((availability.body as { available: boolean }).available, false);
    assert.equal((await client.get('/api/partner/v1/domains/livecoffeeroasters.com')).status, 404);
  });
});
