import assert from 'node:assert/strict';
import { WorkflowNotFoundError } from '@temporalio/common';
import { checkoutSessionWorkflow } from '../../workflows/checkout-session';
import { checkoutWorkflowId } from '../../workflows/messages';
import { recordHistory } from '../helpers/histories';
import { Order } from '../../src/db/entities/order';
import { BROWSER, openCheckoutForm } from '../helpers/checkout-form';
import { freshDomain } from '../helpers/orders';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';


describe('buyer pages: crafted requests get a clear 4xx page, never a 500', () => {
  ownTemporal();
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
  ownTemporal();
  it('20 presses at once for one name share one session, whose seven-day workflow starts only when a buyer first submits its form', async () => {
    const s = getStack();
    const name = (await freshDomain()).name;
    const { cookie, press } = await namePage(name);
    const presses = await Promise.all(Array.from({ length: 20 }, press));
    assert.deepEqual([...new Set(presses.map((r) => r.status))], [303]);
    assert.equal(new Set(presses.map((r) => r.headers.get('location'))).size, 1, 'every press lands on the same checkout');
    const [{ n }] = (await s.dataSource.query(`SELECT count(*)::int AS n FROM checkout_sessions WHERE environment = 'sandbox' AND domain = $1`, [name])) as Array<{ n: number }>;
    assert.equal(n, 1);
    // An abandoned press costs a row, not a workflow.
    const [row] = (await s.dataSource.query(`SELECT public_id, expires_at FROM checkout_sessions WHERE environment = 'sandbox' AND domain = $1`, [name])) as Array<{ public_id: string; expires_at: Date }>;
    const handle = s.env.client.workflow.getHandle(checkoutWorkflowId(row.public_id));
    await assert.rejects(handle.describe(), WorkflowNotFoundError);
    // The first submit starts it, ending when the session does.
    const { pay } = await openCheckoutForm(new URL(presses[0].headers.get('location')!, s.baseUrl).href, { cookie });
    const submitted = await pay('4000000000000002');
    assert.equal(submitted.status, 402, 'declined');
    assert.equal((await handle.describe()).status.name, 'RUNNING');
    const [input] = (await handle.fetchHistory()).events![0].workflowExecutionStartedEventAttributes!.input!.payloads!.map((p) => JSON.parse(Buffer.from(p.data!).toString()) as { expiresAt: string; lifetimeMs: number });
    assert.equal(input.expiresAt, new Date(row.expires_at).toISOString());
    // Its timer is the time left by the database's clock, whatever the workflow's clock says
    // (this file's server may have skipped time already).
    const week = 7 * 24 * 3600_000;
    assert.ok(input.lifetimeMs > week - 5 * 60_000 && input.lifetimeMs <= week, `the time left, ${input.lifetimeMs} ms`);
    assert.equal(await handle.result(), 'expired', 'unpaid, it expires when that time has passed (skipped)');
    await recordHistory(checkoutWorkflowId(row.public_id), 'checkout-buy-now-expired');
  });

  it('a "Buy now" workflow started before the time left was sent (its input: expiresAt only) ends at expiresAt on its own clock', async () => {
    const s = getStack();
    const name = (await freshDomain()).name;
    assert.equal((await (await namePage(name)).press()).status, 303);
    const [row] = (await s.dataSource.query(`SELECT public_id FROM checkout_sessions WHERE environment = 'sandbox' AND domain = $1`, [name])) as Array<{ public_id: string }>;
    // As the API started it before: the session's end, here 7 days on by this server's clock.
    const expiresAt = new Date((await s.env.currentTimeMs()) + 7 * 24 * 3600_000).toISOString();
    const handle = await s.env.client.workflow.start(checkoutSessionWorkflow, { workflowId: checkoutWorkflowId(row.public_id), taskQueue: s.taskQueue, args: [{ sessionPublicId: row.public_id, expiresAt }] });
    assert.equal(await handle.result(), 'expired');
    assert.ok((await s.env.currentTimeMs()) >= Date.parse(expiresAt));
    await recordHistory(checkoutWorkflowId(row.public_id), 'checkout-buy-now-expired-before-lifetime');
  });
});

/** A name's page opened in a browser-like client: its cookies, and `press()` posts its Buy now form. */
async function namePage(name: string) {
  const base = getStack().baseUrl;
  const page = await fetch(`${base}/d/${name}?env=sandbox`, { headers: BROWSER });
  assert.equal(page.status, 200);
  const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1];
  const press = () =>
    fetch(`${base}/d/${name}/buy?env=sandbox`, { method: 'POST', redirect: 'manual', headers: { ...BROWSER, cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf }) });
  return { cookie, press };
}

/** A partner's new checkout session, opened in a browser-like client: `pay(card)` posts its form. */
async function checkoutForm() {
  const { client, partnerId } = await newPartner();
  const session = (await client.post<{ session_id: string; checkout_url: string }>('/api/partner/v1/checkout-session', { domain: (await freshDomain()).name })).body;
  const { html, pay } = await openCheckoutForm(session.checkout_url);
  assert.match(html, /<strong>Sandbox<\/strong>/, 'a sandbox checkout says so');
  return { client, partnerId, pay };
}

describe('sandbox pages say so, live ones do not', () => {
  ownTemporal();
  it('the marketplace search page carries the sandbox banner only with env=sandbox', async () => {
    const base = getStack().baseUrl;
    const sandbox = await (await fetch(`${base}/search?env=sandbox&q=coffee`, { headers: BROWSER })).text();
    const live = await (await fetch(`${base}/search?q=coffee`, { headers: BROWSER })).text();
    assert.match(sandbox, /<strong>Sandbox<\/strong>/);
    assert.doesNotMatch(live, /<strong>Sandbox<\/strong>/);
  });
});

describe('hosted checkout: concurrent submits of one session, and declined cards', () => {
  ownTemporal();
  it('15 submits at once with the slow card pay once, and while they wait the API still gets database connections', async function () {
    this.timeout(60_000);
    const s = getStack();
    const { client, partnerId, pay } = await checkoutForm();
    let firstAnswerAt = Infinity;
    const submits = Array.from({ length: 15 }, () =>
      pay('4000000000000077').then((res) => {
        firstAnswerAt = Math.min(firstAnswerAt, Date.now());
        return res.status;
      }),
    );
    // A moment for the 15 submits to arrive, one claiming the session and the others waiting for
    // it: nothing outside the API shows a submit that waits (it holds no connection), so this is a
    // named pause rather than a poll.
    const submitsArriveMs = 300;
    await new Promise((resolve) => setTimeout(resolve, submitsArriveMs));
    // The slow authorisation holds the session for ~3 s; the other submits wait for it without a
    // connection each (the pool has 10), so a signed request reading Postgres answers meanwhile.
    const list = await client.get('/api/partner/v1/orders');
    const listedAt = Date.now();
    assert.equal(list.status, 200);
    const statuses = await Promise.all(submits);
    // Waiting for the pool, it would answer only as the first payment ends (measured: 2.9 s after
    // the submits, against ~3 s for the payment); without waiting, within milliseconds.
    assert.ok(listedAt < firstAnswerAt - 1_000, `the API answered ${firstAnswerAt - listedAt} ms before the first payment finished`);
    assert.deepEqual([...new Set(statuses)], [200], 'every submit of the same buyer lands on the receipt');
    assert.equal(await s.dataSource.getRepository(Order).countBy({ partnerId }), 1);
  });

  it('after 5 declined cards a session takes no more, not even a good one (card testing)', async () => {
    const { partnerId, pay } = await checkoutForm();
    for (let i = 0; i < 5; i++) assert.equal((await pay('4000000000000002')).status, 402);
    const refused = await pay('4242424242424242');
    assert.equal(refused.status, 429);
    assert.match(await refused.text(), /takes no more cards/);
    assert.equal(await getStack().dataSource.getRepository(Order).countBy({ partnerId }), 0);
  });
});
