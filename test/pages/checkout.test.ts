import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { CheckoutPayment } from '../../src/db/entities/checkout-session';
import { Order } from '../../src/db/entities/order';
import { checkoutWorkflowId } from '../../workflows/messages';
import { launchBrowser, partnerSite, screenshots } from '../helpers/browser';
import { recordHistory } from '../helpers/histories';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { freshDomain, fulfilmentResult, order, quote } from '../helpers/orders';
import type { PartnerClient } from '../../src/client/partner-client';

type SessionBody = { session_id: string; checkout_url: string; domain: string; price_cents: number; status: string; order_id: string | null };

async function openSession(client: PartnerClient, extra: Record<string, string> = {}): Promise<SessionBody> {
  const res = await client.post<SessionBody>('/api/partner/v1/checkout-session', { domain: (await freshDomain()).name, ...extra });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function fillCard(page: Page, card = '4242 4242 4242 4242'): Promise<void> {
  await page.getByLabel('Full name', { exact: true }).fill('Jane Buyer');
  await page.getByLabel('Email', { exact: true }).fill('jane@example.com');
  await page.getByLabel('Card number', { exact: true }).fill(card);
  await page.getByLabel('Expiry', { exact: true }).fill('12/34');
  await page.getByLabel('CVC', { exact: true }).fill('123');
}

describe('the hosted checkout page, in Chromium (CONTRACT §9)', function () {
  ownTemporal();
  this.timeout(120_000);
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it('pays with the approved card and lands on success_url with session_id and order_id; the sale is a service-collected order that fulfils and books the partner\'s commission', async () => {
    const s = getStack();
    const site = await partnerSite();
    const { client, partnerId } = await newPartner();
    const session = await openSession(client, { success_url: `${site.url}/thanks?cart=42`, cancel_url: `${site.url}/cart`, client_reference_id: 'cart-42' });
    const page = await browser.newPage();
    const response = await page.goto(session.checkout_url);
    assert.equal(response?.status(), 200);
    assert.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    assert.equal(response?.headers()['referrer-policy'], 'no-referrer');
    await page.getByRole('heading', { name: `Buy ${session.domain}` }).waitFor();
    assert.match(await page.locator('.price').innerText(), /\$/);
    await screenshots(page, 'checkout-form');
    await fillCard(page);
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL(/\/thanks\?/);
    const landed = new URL(page.url());
    assert.equal(landed.searchParams.get('cart'), '42');
    assert.equal(landed.searchParams.get('session_id'), session.session_id);
    const orderId = landed.searchParams.get('order_id')!;
    assert.match(orderId, /^ord_/);
    await page.close();

    const after = (await client.get<SessionBody>(`/api/partner/v1/checkout-session/${session.session_id}`)).body;
    assert.deepEqual([after.status, after.order_id], ['complete', orderId]);
    const o = (await client.get<{ payment_model: string; client_reference_id: string; status: string; sale_price_cents: number }>(`/api/partner/v1/orders/${orderId}`)).body;
    assert.equal(o.payment_model, 'service_collected');
    assert.equal(o.client_reference_id, 'cart-42');
    assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${session.domain}`)).body.available, false);
    assert.equal((await fulfilmentResult(orderId)).status, 'TRANSFER_COMPLETED');
    assert.equal(await s.env.client.workflow.getHandle(checkoutWorkflowId(session.session_id)).result(), 'complete');
    await recordHistory(checkoutWorkflowId(session.session_id), 'checkout-complete');
    await recordHistory(`order:${orderId}`, 'order-from-checkout');
    const txn = (await client.get<{ data: Array<{ order_id: string; payment_model: string; commission_cents: number }> }>('/api/partner/v1/transactions')).body.data.find((t) => t.order_id === orderId)!;
    assert.deepEqual([txn.payment_model, txn.commission_cents], ['service_collected', Math.floor((session.price_cents * 1000) / 10_000)]);
    const types = ((await client.get<{ data: Array<{ type: string; data: { public_id?: string } }> }>('/api/partner/v1/events?limit=100')).body.data.filter((e) => e.data.public_id === orderId)).map((e) => e.type);
    assert.deepEqual(types, ['order.created', 'transfer.domain_locked', 'transfer.initiated', 'transfer.pending', 'transfer.completed']);
    const payment = await s.dataSource.getRepository(CheckoutPayment).findOneByOrFail({ paymentRef: (await s.dataSource.getRepository(Order).findOneByOrFail({ publicId: orderId })).externalPaymentRef });
    assert.equal(payment.cardLast4, '4242');
    assert.ok(!JSON.stringify(payment).includes('4242424242424242'), 'the card number is not stored');
    void partnerId;
  });

  it('without success_url, a receipt says "Payment received" and shows the order id; opening the link again shows it is paid, never the form', async () => {
    const { client } = await newPartner();
    const session = await openSession(client);
    const page = await browser.newPage();
    await page.goto(session.checkout_url);
    await fillCard(page);
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.getByRole('heading', { name: 'Payment received' }).waitFor();
    const orderId = (await client.get<SessionBody>(`/api/partner/v1/checkout-session/${session.session_id}`)).body.order_id!;
    assert.equal(await page.locator('.order-id').innerText(), orderId);
    await screenshots(page, 'checkout-receipt');
    // The browser that paid, opening the link again: a 4xx page with its own receipt, never the form.
    const again = await page.goto(session.checkout_url);
    assert.equal(again?.status(), 409);
    assert.equal(await page.getByLabel('Card number').count(), 0);
    assert.equal(await page.locator('.order-id').innerText(), orderId);
    // Another browser on the same link: paid, and no order id.
    const other = await browser.newPage();
    assert.equal((await other.goto(session.checkout_url))?.status(), 409);
    assert.equal(await other.locator('.order-id').count(), 0);
    assert.doesNotMatch(await other.content(), new RegExp(orderId));
    await other.close();
    await page.close();
  });

  it('the declined card: "declined" beside the card field, nothing recorded, and the approved card then works', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    const session = await openSession(client);
    const page = await browser.newPage();
    await page.goto(session.checkout_url);
    await fillCard(page, '4000 0000 0000 0002');
    await page.getByRole('button', { name: 'Pay' }).click();
    const error = page.locator('#card_number-error');
    await error.waitFor();
    assert.match(await error.innerText(), /declined/);
    assert.equal(await page.getByLabel('Card number', { exact: true }).getAttribute('aria-invalid'), 'true');
    assert.equal(await page.getByLabel('Card number', { exact: true }).inputValue(), '', 'the card number is not echoed back');
    await screenshots(page, 'checkout-declined');
    assert.equal(await s.dataSource.getRepository(Order).countBy({ partnerId }), 0);
    assert.equal((await client.get<SessionBody>(`/api/partner/v1/checkout-session/${session.session_id}`)).body.status, 'open');
    await page.getByLabel('Card number', { exact: true }).fill('4242424242424242');
    await page.getByLabel('CVC', { exact: true }).fill('123');
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.getByRole('heading', { name: 'Payment received' }).waitFor();
    await page.close();
  });

  it('missing and malformed fields are named beside each field, in a summary, and keyboard-reachable', async () => {
    const { client } = await newPartner();
    const session = await openSession(client);
    const page = await browser.newPage();
    await page.goto(session.checkout_url);
    await page.getByLabel('Expiry', { exact: true }).fill('13/99');
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.locator('#error-summary').waitFor();
    for (const id of ['name', 'email', 'card_number', 'expiry', 'cvc']) assert.equal(await page.locator(`#${id}-error`).count(), 1, id);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'error-summary');
    await screenshots(page, 'checkout-errors');
    await page.close();
  });

  it('a NUL or other control character in a typed field is named beside it, and nothing is charged', async () => {
    const { client, partnerId } = await newPartner();
    const session = await openSession(client);
    const page = await browser.newPage();
    await page.goto(session.checkout_url);
    await fillCard(page);
    await page.locator('#name').evaluate((el) => {
      (el as HTMLInputElement).value = 'Jane\u0000Buyer';
    });
    const [res] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Pay' }).click()]);
    assert.equal(res.status(), 422);
    await page.locator('#name-error').waitFor();
    assert.equal(await getStack().dataSource.getRepository(Order).countBy({ partnerId }), 0);
    assert.equal((await client.get<SessionBody>(`/api/partner/v1/checkout-session/${session.session_id}`)).body.status, 'open');
    await fillCard(page);
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.getByRole('heading', { name: 'Payment received' }).waitFor();
    await page.close();
  });

  it('a tampered pt, or none, shows a clear 4xx page and never the form', async () => {
    const { client } = await newPartner();
    const session = await openSession(client);
    const page = await browser.newPage();
    const url = new URL(session.checkout_url);
    const pt = url.searchParams.get('pt')!;
    for (const bad of [`${pt.slice(0, -2)}xx`, pt.replace(/\.(\d+)\./, (_m, n) => `.${Number(n) + 86400}.`), '', 'cs_x']) {
      url.searchParams.set('pt', bad);
      const res = await page.goto(url.toString());
      assert.equal(res?.status(), 400, bad);
      await page.getByRole('heading', { name: 'This checkout link is not valid' }).waitFor();
      assert.equal(await page.getByLabel('Card number').count(), 0);
    }
    await screenshots(page, 'checkout-invalid-link');
    await page.close();
  });

  it('an expired session (7 days skipped on its workflow) shows the expired page, never the form', async () => {
    const s = getStack();
    const { client } = await newPartner();
    const session = await openSession(client);
    assert.equal(await s.env.client.workflow.getHandle(checkoutWorkflowId(session.session_id)).result(), 'expired');
    const page = await browser.newPage();
    const res = await page.goto(session.checkout_url);
    assert.equal(res?.status(), 410);
    await page.getByRole('heading', { name: 'This checkout has expired' }).waitFor();
    assert.equal(await page.getByLabel('Card number').count(), 0);
    await screenshots(page, 'checkout-expired');
    await page.close();
  });

  it('a double submit and a second tab pay once: one order, one payment, both land on the same order', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    const session = await openSession(client);
    const context = await browser.newContext();
    const [first, second] = [await context.newPage(), await context.newPage()];
    for (const page of [first, second]) {
      await page.goto(session.checkout_url);
      await fillCard(page, '4000 0000 0000 0077'); // the slow authorisation: both are in flight together
    }
    // A double submit in the first tab (the page says the payment is on its way), and the second tab at the same time.
    const [progress] = await Promise.all([
      first.evaluate(() => {
        const form = document.getElementById('payment-form') as HTMLFormElement;
        form.requestSubmit();
        const text = document.getElementById('progress')!.textContent ?? '';
        form.requestSubmit();
        return text;
      }),
      second.getByRole('button', { name: 'Pay' }).click(),
    ]);
    for (const page of [first, second]) await page.getByRole('heading', { name: 'Payment received' }).waitFor({ timeout: 30_000 });
    const ids = await Promise.all([first, second].map((p) => p.locator('.order-id').innerText()));
    assert.equal(ids[0], ids[1]);
    assert.match(progress, /Processing your payment/);
    assert.equal(await s.dataSource.getRepository(Order).countBy({ partnerId }), 1);
    assert.equal(await s.dataSource.getRepository(CheckoutPayment).countBy({ sessionId: (await s.dataSource.query('SELECT id FROM checkout_sessions WHERE public_id = $1', [session.session_id]))[0].id }), 1);
    await context.close();
  });

  it('another buyer on the same link after it was paid is told the name is gone, never shown the first buyer\'s order', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    const session = await openSession(client);
    const [jane, bob] = [await browser.newPage(), await browser.newPage()];
    for (const page of [jane, bob]) await page.goto(session.checkout_url);
    await fillCard(jane);
    await jane.getByRole('button', { name: 'Pay' }).click();
    await jane.getByRole('heading', { name: 'Payment received' }).waitFor();
    const janesOrder = await jane.locator('.order-id').innerText();
    await fillCard(bob);
    await bob.getByLabel('Full name', { exact: true }).fill('Bob Other');
    await bob.getByLabel('Email', { exact: true }).fill('bob@example.com');
    const [res] = await Promise.all([bob.waitForResponse((r) => r.request().method() === 'POST'), bob.getByRole('button', { name: 'Pay' }).click()]);
    assert.equal(res.status(), 409);
    const text = await bob.locator('main').innerText();
    assert.match(text, /bought by another buyer/);
    assert.match(text, /not been charged/);
    assert.ok(!text.includes(janesOrder), 'the first buyer\'s order number is not shown');
    assert.equal(await s.dataSource.getRepository(Order).countBy({ partnerId }), 1);
    await screenshots(bob, 'checkout-bought-by-another');
    await jane.close();
    await bob.close();
  });

  it('a name sold between opening the checkout and paying: a clear page, no charge, no order', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    const session = await openSession(client);
    const page = await browser.newPage();
    await page.goto(session.checkout_url);
    await fillCard(page);
    // Meanwhile another partner sells the name.
    const other = await newPartner();
    const q = await quote(other.client, session.domain);
    assert.equal(q.status, 201, q.text);
    assert.equal((await order(other.client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_stall_transfer_rival', sale_price_cents: q.body.price_cents })).status, 201);
    const res = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Pay' }).click()]);
    assert.equal(res[0].status(), 409);
    await page.getByRole('heading', { name: `${session.domain} is no longer available` }).waitFor();
    assert.match(await page.locator('main').innerText(), /not been charged/);
    await screenshots(page, 'checkout-sold');
    assert.equal(await s.dataSource.getRepository(Order).countBy({ partnerId }), 0);
    assert.equal((await s.dataSource.query('SELECT count(*)::int AS n FROM checkout_payments p JOIN checkout_sessions c ON c.id = p.session_id WHERE c.public_id = $1', [session.session_id]))[0].n, 0);
    await page.close();
  });

  it('a form post without the CSRF token from its page is refused and charges nothing', async () => {
    const { client } = await newPartner();
    const session = await openSession(client);
    const pt = new URL(session.checkout_url).searchParams.get('pt')!;
    const res = await fetch(new URL('/checkout', session.checkout_url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ pt, name: 'Mallory', email: 'm@example.com', card_number: '4242424242424242', expiry: '12/34', cvc: '123' }),
      redirect: 'manual',
    });
    assert.equal(res.status, 403);
    assert.equal((await client.get<SessionBody>(`/api/partner/v1/checkout-session/${session.session_id}`)).body.status, 'open');
  });
});
