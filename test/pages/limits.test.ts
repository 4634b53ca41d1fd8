import assert from 'node:assert/strict';
import { createApp } from '../../src/api/app';
import { clientKey } from '../../src/api/client-key';
import { DEFAULT_PAGE_LIMITS, PageLimits } from '../../src/pages/limits';
import { admissionRedis } from '../../src/auth/redis-admission';
import { startTestRedis } from '../helpers/redis';
import { BROWSER, openCheckoutForm } from '../helpers/checkout-form';
import { freshDomain } from '../helpers/orders';
import { affiliatePartner, CLICKS_STORED_MS } from '../helpers/referral';
import { waitFor } from '../helpers/wait';
import { getStack, listen, newPartner, ownTemporal } from '../helpers/stack';

let nextAddress = 10;
/** A client address of its own (documentation range), as the proxy in front says (TRUST_PROXY). */
const address = () => ({ ...BROWSER, 'x-forwarded-for': `203.0.113.${nextAddress++}` });

/**
 * Public pages under load from one address (CONTRACT §15), against an app with the default limits
 * behind a trusted proxy: the flooding address is refused with a 429 page and Retry-After, while
 * another address is served as usual.
 */
describe('public pages: limits per client address', function () {
  ownTemporal();
  this.timeout(120_000);
  let baseUrl: string;
  before(async () => {
    const s = getStack();
    baseUrl = await listen(createApp({ ...s.appDeps, config: { ...s.appDeps.config, http: { ...s.appDeps.config.http, trustProxy: true }, pageLimits: DEFAULT_PAGE_LIMITS } }));
  });

  it('page requests: a burst of 60 from one address passes, then 429 with Retry-After; another address is served meanwhile; probes are never limited', async () => {
    const flood = address();
    const honest = address();
    const answers = [];
    for (let i = 0; i < 70; i++) answers.push((await fetch(`${baseUrl}/search?env=sandbox&q=coffee`, { headers: flood })).status);
    assert.deepEqual(answers.slice(0, 60), Array(60).fill(200));
    assert.deepEqual([...new Set(answers.slice(60))], [429]);
    const refused = await fetch(`${baseUrl}/search?env=sandbox`, { headers: flood });
    assert.equal(refused.status, 429);
    const wait = Number(refused.headers.get('retry-after'));
    assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
    assert.match(await refused.text(), /Too many requests/);
    assert.equal((await fetch(`${baseUrl}/search?env=sandbox&q=coffee`, { headers: honest })).status, 200, 'another address is served');
    assert.equal((await fetch(`${baseUrl}/healthz`, { headers: flood })).status, 200, 'probes are not pages');
    // Without TRUST_PROXY the header is nobody's word: the suite's app serves the same header freely.
    assert.equal((await fetch(`${getStack().baseUrl}/search?env=sandbox`, { headers: flood })).status, 200);
  });

  it('tracking links always redirect, but one address counts at most 30 clicks a minute', async () => {
    const { client } = await affiliatePartner();
    const link = (await client.post<{ url: string }>('/api/partner/v1/links', { kind: 'generic' })).body;
    const url = `${baseUrl}${new URL(link.url).pathname}`;
    const clicker = address();
    const statuses = [];
    for (let i = 0; i < 40; i++) statuses.push((await fetch(url, { headers: clicker, redirect: 'manual' })).status);
    assert.deepEqual([...new Set(statuses)], [302]);
    await waitFor(async () => (await client.get<{ clicks: number }>('/api/partner/v1/me/clicks')).body.clicks, (n) => n === 30, CLICKS_STORED_MS, '30 clicks stored');
    // A deliberate pause to show that nothing more comes: over two of the click writer's 200 ms
    // batches, so a 31st click, had one been counted, would be stored by now.
    const NO_MORE_CLICKS_MS = 500;
    await new Promise((r) => setTimeout(r, NO_MORE_CLICKS_MS));
    assert.equal((await client.get<{ clicks: number }>('/api/partner/v1/me/clicks')).body.clicks, 30, 'and no more');
  });

  it('tracking links: an address is limited in the codes it makes the service look up (unknown ones answer 404, then 429), while a known link keeps redirecting', async () => {
    const { client } = await affiliatePartner();
    const link = (await client.post<{ url: string }>('/api/partner/v1/links', { kind: 'generic' })).body;
    const real = `${baseUrl}${new URL(link.url).pathname}`;
    const scanner = address();
    assert.equal((await fetch(real, { headers: scanner, redirect: 'manual' })).status, 302, 'looked up once, then known');
    const statuses: number[] = [];
    for (let i = 0; i < DEFAULT_PAGE_LIMITS.lookupsPerMinute + 20; i++) {
      statuses.push((await fetch(`${baseUrl}/r/scan${String(i).padStart(6, '0')}x`, { headers: scanner, redirect: 'manual' })).status);
    }
    assert.equal(statuses.filter((s) => s === 404).length, DEFAULT_PAGE_LIMITS.lookupsPerMinute - 1, `one lookup went to the real link: ${statuses.join(' ')}`);
    assert.ok(statuses.slice(-20).every((s) => s === 429), 'then refused before any lookup');
    assert.equal((await fetch(real, { headers: scanner, redirect: 'manual' })).status, 302, 'the known link still redirects');
    assert.equal((await fetch(`${baseUrl}/r/scan000000x`, { headers: scanner, redirect: 'manual' })).status, 404, 'a code found unknown is remembered apart (no lookup, no point)');
    assert.equal((await fetch(`${baseUrl}/r/other0001x`, { headers: address(), redirect: 'manual' })).status, 404, 'another address looks up');
  });

  it('card testing across sessions: after 10 declined cards in an hour, one address gets the 429 page on any session; another address pays', async () => {
    const { client } = await newPartner();
    /** A new session's form, opened from `headers`' address; `pay(card)` submits it. */
    const form = async (headers: Record<string, string>) => {
      const session = (await client.post<{ checkout_url: string }>('/api/partner/v1/checkout-session', { domain: (await freshDomain()).name })).body;
      return (await openCheckoutForm(session.checkout_url, { baseUrl, headers, buyer: { name: 'Card Tester', email: 'tester@example.com' } })).pay;
    };
    const tester = address();
    const declined = [];
    for (const tries of [5, 5]) {
      const pay = await form(tester);
      for (let i = 0; i < tries; i++) declined.push((await pay('4000000000000002')).status);
    }
    assert.deepEqual([...new Set(declined)], [402], 'ten declines, five per session');
    const third = await form(tester);
    const blocked = await third('4242424242424242');
    assert.equal(blocked.status, 429);
    assert.ok(Number(blocked.headers.get('retry-after')) > 0);
    assert.match(await blocked.text(), /No more cards from here/);
    const buyer = await form(address());
    assert.ok([200, 303].includes((await buyer('4242424242424242')).status), 'another address pays');
  });

  it('card testing in parallel: 8 sessions × 5 simultaneous declined cards from one address reach the processor at most 10 times', async () => {
    const { client } = await newPartner();
    const tester = address();
    const forms = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const session = (await client.post<{ checkout_url: string }>('/api/partner/v1/checkout-session', { domain: (await freshDomain()).name })).body;
        return (await openCheckoutForm(session.checkout_url, { baseUrl, headers: tester, buyer: { name: 'Card Tester', email: 'tester@example.com' } })).pay;
      }),
    );
    const statuses: number[] = [];
    for (let round = 0; round < 5; round++) statuses.push(...(await Promise.all(forms.map((pay) => pay('4000000000000002')))).map((r) => r.status));
    // 402: the processor declined the card (it was asked); 429: refused before it was asked.
    const declined = statuses.filter((s) => s === 402).length;
    assert.ok(declined <= DEFAULT_PAGE_LIMITS.declinesPerHour, `${declined} cards reached the processor and were declined: ${statuses.join(' ')}`);
    assert.ok(statuses.includes(429), `the rest refused with the 429 page: ${statuses.join(' ')}`);
  });

  it('an IPv6 client is counted by its /64 (a host has a whole /64 to rotate through), an IPv4-mapped one as its IPv4 address', async () => {
    const limits = new PageLimits({ ...DEFAULT_PAGE_LIMITS, buyNowPerHour: 3 });
    const presses = async (addresses: string[]) => {
      const allowed = [];
      for (const a of addresses) allowed.push((await limits.buyNowPress(a)).allowed);
      return allowed;
    };
    // Four addresses of one /64, written every way they can be.
    assert.deepEqual(await presses(['2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:0db8:0001:0002:0:0:0:7', '2001:db8:1:2:a:b:c:d']), [true, true, true, false]);
    assert.deepEqual(await presses(['2001:db8:1:3::1']), [true], 'the next /64 is someone else');
    assert.deepEqual(await presses(['::ffff:198.51.100.9', '198.51.100.9', '::ffff:198.51.100.9', '198.51.100.9']), [true, true, true, false], 'IPv4-mapped is the IPv4 address');
    assert.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientKey('::1'), '0:0:0:0::/64');
    assert.equal(clientKey('::ffff:c633:6409'), '198.51.100.9', 'an IPv4-mapped address in hex is the IPv4 address too');
  });

  it('"Buy now" opens at most 20 checkouts an hour per address', async () => {
    const presser = address();
    const name = (await freshDomain()).name;
    const page = await fetch(`${baseUrl}/d/${name}?env=sandbox`, { headers: presser });
    const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1];
    const press = (headers: Record<string, string>) =>
      fetch(`${baseUrl}/d/${name}/buy?env=sandbox`, { method: 'POST', redirect: 'manual', headers: { ...headers, cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf }) });
    const statuses = [];
    for (let i = 0; i < 21; i++) statuses.push((await press(presser)).status);
    assert.deepEqual([...new Set(statuses.slice(0, 20))], [303]);
    assert.equal(statuses[20], 429);
    assert.equal((await press(address())).status, 303, 'another address is not held back');
  });

  it('in Redis, every API process counts the same address together: two processes\' limits refuse the 61st page of a burst between them', async () => {
    const redis = await startTestRedis();
    const clients = [admissionRedis(redis.url), admissionRedis(redis.url)];
    try {
      // Connected as the API's admission connects it (until then the limits are each process's own).
      await Promise.all(clients.map((client) => client.connect()));
      const [a, b] = clients.map((client) => new PageLimits(DEFAULT_PAGE_LIMITS, client));
      const verdicts = [];
      for (let i = 0; i < 61; i++) verdicts.push((await (i % 2 ? a : b).page('198.51.100.77')).allowed);
      assert.equal(verdicts.filter(Boolean).length, 60);
      assert.equal(verdicts[60], false);
      assert.equal((await a.page('198.51.100.78')).allowed, true, 'another address');
    } finally {
      for (const client of clients) client.disconnect();
      await redis.remove();
    }
  });
});
