import assert from 'node:assert/strict';
import { freshDomain } from '../helpers/orders';
import { getStack } from '../helpers/stack';

const BROWSER = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36' };

describe('buyer pages: crafted requests get a clear 4xx page, never a 500', () => {
  it('an asset named like an object property, an oversized or aborted form, a NUL behind a malformed escape', async () => {
    const base = getStack().baseUrl;
    for (const file of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const res = await fetch(`${base}/checkout/assets/${file}`, { headers: BROWSER });
      assert.equal(res.status, 404, file);
      assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    }
    const big = await fetch(`${base}/d/bakery.co/buy?env=sandbox`, { method: 'POST', headers: { ...BROWSER, 'content-type': 'application/x-www-form-urlencoded' }, body: `_csrf=x&pad=${'a'.repeat(10_000)}` });
    assert.equal(big.status, 400);
    assert.match(await big.text(), /could not be read/);
    for (const path of ['/d/%E0%A4%A%00', '/d/%00x.com?env=sandbox', '/r/%00abcdef']) {
      const res = await fetch(`${base}${path}`, { headers: BROWSER, redirect: 'manual' });
      assert.equal(res.status, 404, path);
    }
    const framed = await fetch(`${base}/r/nonexistent-code`, { headers: BROWSER, redirect: 'manual' });
    assert.equal(framed.status, 404);
    assert.equal(framed.headers.get('x-frame-options'), 'DENY');
  });
});

describe('"Buy now" on a name\'s page: a burst of presses opens one checkout session', () => {
  it('20 presses at once for one name share one session (and one seven-day workflow)', async () => {
    const s = getStack();
    const name = (await freshDomain()).name;
    const page = await fetch(`${s.baseUrl}/d/${name}?env=sandbox`, { headers: BROWSER });
    assert.equal(page.status, 200);
    const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1];
    const presses = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${s.baseUrl}/d/${name}/buy?env=sandbox`, { method: 'POST', redirect: 'manual', headers: { ...BROWSER, cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf }) }),
      ),
    );
    assert.deepEqual([...new Set(presses.map((r) => r.status))], [303]);
    assert.equal(new Set(presses.map((r) => r.headers.get('location'))).size, 1, 'every press lands on the same checkout');
    const [{ n }] = (await s.dataSource.query(`SELECT count(*)::int AS n FROM checkout_sessions WHERE environment = 'sandbox' AND domain = $1`, [name])) as Array<{ n: number }>;
    assert.equal(n, 1);
  });
});
