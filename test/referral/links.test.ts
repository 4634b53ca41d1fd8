import assert from 'node:assert/strict';
import { affiliatePartner, BROWSER_UA, CLICKS_STORED_MS } from '../helpers/referral';
import { waitFor } from '../helpers/wait';
import { getStack, newPartner } from '../helpers/stack';
import { ReferralClick, ReferralLink } from '../../src/db/entities/referral';
import { freshDomain } from '../helpers/orders';
import type { PartnerClient } from '../../src/client/partner-client';

type LinkBody = { link_id: string; kind: string; url: string; domain?: string; product?: string; campaign?: string; created_at: string };
const code = (body: unknown) => (body as { error: { code: string } }).error.code;

async function open(url: string, headers: Record<string, string> = {}, method = 'GET') {
  return fetch(url, { method, headers: { 'user-agent': BROWSER_UA, ...headers }, redirect: 'manual' });
}

async function clicks(client: PartnerClient, query = ''): Promise<{ clicks: number; unique_clicks: number }> {
  return (await client.get<{ clicks: number; unique_clicks: number }>(`/api/partner/v1/me/clicks${query}`)).body;
}

describe('referral links and honest click counts (CONTRACT §11)', () => {
  it('every referral endpoint answers 403 affiliate_account_required to a partner without an affiliate account', async () => {
    const { client } = await newPartner();
    const calls = [
      client.post('/api/partner/v1/links', { kind: 'generic' }),
      client.get('/api/partner/v1/links'),
      client.get('/api/partner/v1/me/clicks'),
      client.get('/api/partner/v1/me/sales'),
      client.get('/api/partner/v1/me/commissions'),
      client.get('/api/partner/v1/me/payouts'),
      client.get('/api/partner/v1/analytics'),
      // Checked right after the scope: a bad body or query from such a partner is still 403.
      client.post('/api/partner/v1/links', { kind: 'nope' }),
      client.post('/api/partner/v1/links', '{'),
      client.get('/api/partner/v1/links?limit=0'),
      client.get('/api/partner/v1/me/clicks?from=yesterday'),
    ];
    for (const res of await Promise.all(calls)) assert.deepEqual([res.status, code(res.body)], [403, 'affiliate_account_required']);
  });

  it('POST /links makes generic, domain and product links; bad bodies are 400, a name outside the inventory 404', async () => {
    const { client } = await affiliatePartner();
    const domain = (await freshDomain()).name;
    const generic = await client.post<LinkBody>('/api/partner/v1/links', { kind: 'generic', campaign: 'spring' });
    assert.equal(generic.status, 201, generic.text);
    assert.match(generic.body.link_id, /^lnk_/);
    assert.match(generic.body.url, /\/r\/[A-Za-z0-9_-]{12}$/);
    assert.equal(generic.body.campaign, 'spring');
    const byDomain = await client.post<LinkBody>('/api/partner/v1/links', { kind: 'domain', domain });
    assert.deepEqual([byDomain.status, byDomain.body.domain], [201, domain]);
    const product = await client.post<LinkBody>('/api/partner/v1/links', { kind: 'product', product: 'brokerage' });
    assert.deepEqual([product.status, product.body.product], [201, 'brokerage']);
    for (const body of [{ kind: 'domain' }, { kind: 'product' }, { kind: 'product', product: 'hosting' }, { kind: 'generic', domain }, { kind: 'nope' }]) {
      assert.equal((await client.post('/api/partner/v1/links', body)).status, 400, JSON.stringify(body));
    }
    assert.equal((await client.post('/api/partner/v1/links', { kind: 'domain', domain: 'not-in-the-inventory-at-all.com' })).status, 404);

    // Each link lands where it says.
    assert.equal((await open(generic.body.url)).headers.get('location'), '/search?env=sandbox');
    assert.equal((await open(byDomain.body.url)).headers.get('location'), `/d/${domain}?env=sandbox`);
    assert.equal((await open(product.body.url)).headers.get('location'), '/brokerage?env=sandbox');
    const listed = (await client.get<{ data: Array<LinkBody & { clicks: number; sales: number; commission_cents: number }> }>('/api/partner/v1/links')).body.data;
    assert.deepEqual(listed.map((l) => l.link_id), [product.body.link_id, byDomain.body.link_id, generic.body.link_id]);
    await waitFor(async () => (await client.get<{ data: Array<{ clicks: number }> }>('/api/partner/v1/links')).body.data.map((l) => l.clicks), (counts) => counts.every((n) => n === 1), CLICKS_STORED_MS, 'each link shows its click');
  });

  it('bots, HEAD and prefetches are redirected but not counted; a person is counted once per link per UTC day (a keyed hash, never the IP), the cookie set for 30 days', async () => {
    const { client } = await affiliatePartner();
    const link = (await client.post<LinkBody>('/api/partner/v1/links', { kind: 'generic' })).body;
    for (const [headers, method] of [
      [{ 'user-agent': 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' }, 'GET'],
      [{ 'user-agent': 'curl/8.5.0' }, 'GET'],
      [{ 'user-agent': '' }, 'GET'],
      [{}, 'HEAD'],
      [{ 'sec-purpose': 'prefetch' }, 'GET'],
      [{ purpose: 'prefetch' }, 'GET'],
    ] as const) {
      const res = await open(link.url, headers, method);
      assert.equal(res.status, 302);
      assert.equal(res.headers.get('set-cookie'), null, 'no attribution for what is not a click');
    }
    const first = await open(link.url);
    assert.match(first.headers.get('x-request-id') ?? '', /^req_/, 'an id, as every response has');
    const cookie = first.headers.get('set-cookie')!;
    assert.match(cookie, /^ref=/);
    assert.match(cookie, /max-age=2592000|expires=/i);
    assert.match(cookie, /httponly/i);
    const again = await open(link.url, { cookie: cookie.split(';')[0] });
    assert.equal(again.status, 302);
    await open(link.url, { 'user-agent': `${BROWSER_UA} Edg/156` }); // another visitor (no cookie, another agent)
    await waitFor(() => clicks(client), (c) => c.clicks === 3, CLICKS_STORED_MS, 'three clicks stored');
    assert.deepEqual(await clicks(client), { from: null, to: null, clicks: 3, unique_clicks: 2 } as never);
    const today = new Date().toISOString().slice(0, 10);
    assert.deepEqual(await clicks(client, `?from=${today}&to=${today}`), { from: today, to: today, clicks: 3, unique_clicks: 2 } as never);
    assert.deepEqual(await clicks(client, '?from=2000-01-01&to=2000-01-31'), { from: '2000-01-01', to: '2000-01-31', clicks: 0, unique_clicks: 0 } as never);
    assert.equal((await client.get('/api/partner/v1/me/clicks?from=yesterday')).status, 400);
  });

  it('a flood of /r/ from one visitor grows no table: one row per link, visitor and day holds the count (CONTRACT §15)', async () => {
    const { client } = await affiliatePartner();
    const link = (await client.post<LinkBody>('/api/partner/v1/links', { kind: 'generic' })).body;
    const cookie = (await open(link.url)).headers.get('set-cookie')!.split(';')[0];
    // In waves, each stored before the next is sent, so the clicks reach the database in several
    // batches (each adds to the same row).
    for (let wave = 0; wave < 4; wave++) {
      const answers = await Promise.all(Array.from({ length: 30 }, () => open(link.url, { cookie })));
      assert.ok(answers.every((r) => r.status === 302));
      if (wave < 3) await waitFor(() => clicks(client), (c) => c.clicks === 1 + 30 * (wave + 1), CLICKS_STORED_MS, `the clicks of wave ${wave + 1} stored`);
    }
    await waitFor(() => clicks(client), (c) => c.clicks === 121, CLICKS_STORED_MS, 'every click counted');
    assert.deepEqual(await clicks(client), { from: null, to: null, clicks: 121, unique_clicks: 1 } as never);
    const stored = await getStack().dataSource.getRepository(ReferralLink).findOneByOrFail({ publicId: link.link_id });
    const rows = await getStack().dataSource.getRepository(ReferralClick).findBy({ linkId: stored.id });
    assert.equal(rows.length, 1, 'one row for the visitor and day');
    assert.equal(rows[0].clicks, 121);
    assert.ok(rows[0].firstClickedAt <= rows[0].lastClickedAt);
    const links = (await client.get<{ data: Array<{ link_id: string; clicks: number }> }>('/api/partner/v1/links')).body.data;
    assert.equal(links.find((l) => l.link_id === link.link_id)?.clicks, 121);
  });

  it('an unknown or malformed link is a 404 page', async () => {
    const { client } = await affiliatePartner();
    const link = (await client.post<LinkBody>('/api/partner/v1/links', { kind: 'generic' })).body;
    const base = new URL(link.url).origin;
    assert.equal((await open(`${base}/r/zzzzzzzzzzzz`)).status, 404);
    assert.equal((await open(`${base}/r/%3Cscript%3E`)).status, 404);
  });
});
