import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { createApp } from '../../src/api/app';
import { StripeCheckout } from '../../src/checkout/stripe';
import { recordHostedPayment, startHostedPayment, type CheckoutDeps } from '../../src/checkout/sessions';
import { LedgerPosting } from '../../src/db/entities/ledger-posting';
import { CardDispute } from '../../src/db/entities/card-dispute';
import { SaleTransaction } from '../../src/db/entities/sale-transaction';
import { openDisputes } from '../../src/checkout/disputes';
import type { PartnerClient } from '../../src/client/partner-client';
import { In } from 'typeorm';
import { checkoutDeps } from '../../src/api/app';
import { CheckoutPayment, CheckoutSession } from '../../src/db/entities/checkout-session';
import { Domain } from '../../src/db/entities/domain';
import { Order } from '../../src/db/entities/order';
import { ProcessorEvent } from '../../src/db/entities/processor-event';
import { importInventory } from '../../src/discovery/inventory';
import { reconcile } from '../../src/finance/reconcile';
import { freePort } from '../../src/main/child-process';
import { ensureStripeMock } from '../../src/temporal/tools';
import { orderWorkflowId } from '../../workflows/messages';
import { launchBrowser, screenshots } from '../helpers/browser';
import { waitFor } from '../helpers/wait';
import { advanceOrderThrough, sweepCardMoney, TO_COMPLETED } from '../helpers/activities';
import { getStack, listen, newPartner, ownTemporal } from '../helpers/stack';

const WEBHOOK_SECRET = `whsec_${randomBytes(16).toString('hex')}`;

/**
 * Live checkout through Stripe (CONTRACT §9): the adapter runs against stripe-mock (Stripe's own
 * mock, which validates every request against Stripe's API description); stripe-mock sends no
 * events, so each is built as Stripe does and signed with the library's test-header helper.
 */
describe('live checkout through Stripe (stripe-mock): the processor\'s page, its signed events, no card field', function () {
  ownTemporal();
  this.timeout(120_000);
  let mock: ChildProcess;
  let stripe: StripeCheckout;
  let baseUrl: string;
  let deps: CheckoutDeps;
  let browser: Browser;

  before(async () => {
    const s = getStack();
    const binary = await ensureStripeMock(s.config.toolCacheDir);
    assert.ok(binary, 'stripe-mock is built with Go');
    const port = await freePort();
    mock = spawn(binary, ['-http-port', String(port), '-https-port', '0'], { stdio: 'ignore' });
    const apiUrl = `http://127.0.0.1:${port}`;
    await waitFor(() => fetch(`${apiUrl}/v1/charges`, { headers: { authorization: 'Bearer sk_test_123' } }).then((r) => r.status, () => 0), (status) => status === 200, 20_000, 'stripe-mock listening');
    stripe = new StripeCheckout({ secretKey: 'sk_test_123', webhookSecret: WEBHOOK_SECRET, apiUrl });
    const appDeps = { ...s.appDeps, hosted: { live: stripe } };
    deps = checkoutDeps(appDeps);
    baseUrl = await listen(createApp(appDeps));
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    mock?.kill();
  });

  async function liveSession(priceCents = 25_000): Promise<{ sessionId: string; checkoutUrl: string; partnerId: string; client: PartnerClient }> {
    const s = getStack();
    const { client, partnerId } = await newPartner({ environment: 'live', baseUrl });
    const name = `live-${randomUUID().slice(0, 8)}.com`;
    await importInventory(s.dataSource, 'live', [{ name, category: 'business', buy_now_price_cents: priceCents, floor_price_cents: 1, currency: 'USD', status: 'listed', active_site: false }]);
    const res = await client.post<{ session_id: string; checkout_url: string }>('/api/partner/v1/checkout-session', { domain: name });
    assert.equal(res.status, 201, res.text);
    return { sessionId: res.body.session_id, checkoutUrl: res.body.checkout_url, partnerId, client };
  }

  /** Checkout Session `completed` (or `expired`) as Stripe sends it, for the session's attempt. */
  function event(type: 'checkout.session.completed' | 'checkout.session.expired', sessionId: string, attempt: number, amount: number, currency = 'usd', id = `evt_${randomBytes(12).toString('hex')}`) {
    return JSON.stringify({
      id,
      object: 'event',
      api_version: '2025-01-27.acacia',
      created: Math.floor(Date.now() / 1000),
      type,
      data: {
        object: {
          id: `cs_test_${randomBytes(12).toString('hex')}`,
          object: 'checkout.session',
          client_reference_id: sessionId,
          metadata: { checkout_session: sessionId, attempt: String(attempt) },
          payment_status: type === 'checkout.session.completed' ? 'paid' : 'unpaid',
          status: type === 'checkout.session.completed' ? 'complete' : 'expired',
          amount_total: amount,
          currency,
          payment_intent: type === 'checkout.session.completed' ? `pi_${randomBytes(12).toString('hex')}` : null,
        },
      },
    });
  }
  const send = (payload: string, signature?: string) =>
    fetch(`${baseUrl}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', ...(signature === undefined ? {} : { 'stripe-signature': signature }) }, body: payload });
  const session = (id: string) => getStack().dataSource.getRepository(CheckoutSession).findOneByOrFail({ publicId: id });

  it('in Chromium: the live page asks no card, "Continue to payment" goes to Stripe\'s page; the signed event records the sale and starts its fulfilment; the return shows the receipt', async () => {
    const s = getStack();
    const { sessionId, checkoutUrl } = await liveSession();
    const context = await browser.newContext();
    const page = await context.newPage();
    // Stripe's page cannot be opened here: its address is answered by a stand-in, so the redirect is seen.
    await page.route('https://checkout.stripe.com/**', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<title>Stripe Checkout</title>' }));
    await page.goto(checkoutUrl);
    await page.getByRole('heading', { name: /^Buy live-/ }).waitFor();
    assert.equal(await page.getByLabel('Card number').count(), 0, 'no card field on a live page');
    assert.equal(await page.locator('input[autocomplete^="cc-"]').count(), 0);
    await screenshots(page, 'checkout-live');
    await page.getByLabel('Full name', { exact: true }).fill('Live Buyer');
    await page.getByLabel('Email', { exact: true }).fill('live@example.com');
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.waitForURL(/^https:\/\/checkout\.stripe\.com\//);
    const paying = await session(sessionId);
    assert.ok(paying.payingSince, 'the attempt is out, the name held');
    assert.equal((await s.dataSource.getRepository(Domain).findOneByOrFail({ id: paying.domainId })).status, 'reserved');

    // Back before the event: "Confirming your payment…", looking again by itself.
    const returnUrl = `${baseUrl}/checkout/return?pt=${new URL(checkoutUrl).searchParams.get('pt')}`;
    const early = await page.goto(returnUrl);
    assert.equal(early?.status(), 202);
    await page.getByRole('heading', { name: 'Confirming your payment…' }).waitFor();

    const payload = event('checkout.session.completed', sessionId, 1, 25_000);
    const res = await send(payload, stripe.signForTest(payload));
    assert.equal(res.status, 200, await res.text());
    const paid = await session(sessionId);
    assert.equal(paid.status, 'complete');
    const order = await s.dataSource.getRepository(Order).findOneByOrFail({ id: paid.orderId! });
    assert.deepEqual([order.environment, order.paymentModel, order.salePriceCents], ['live', 'service_collected', 25_000]);
    const paymentRef = (JSON.parse(payload) as { data: { object: { payment_intent: string } } }).data.object.payment_intent;
    assert.equal((await s.dataSource.getRepository(CheckoutPayment).findOneByOrFail({ sessionId: paid.id })).paymentRef, paymentRef);
    await waitFor(() => s.env.client.workflow.getHandle(orderWorkflowId(order.publicId)).describe().then((d) => d.status.name, () => 'none'), (status) => status === 'RUNNING', 20_000, 'its fulfilment started');

    // The same browser's return now shows the receipt.
    await page.goto(returnUrl);
    await page.getByRole('heading', { name: 'Payment received' }).waitFor();
    assert.equal(await page.locator('.order-id').innerText(), order.publicId);
    await screenshots(page, 'checkout-live-receipt');
    await context.close();

    // The same event again (Stripe retries): 200, nothing new.
    const again = await send(payload, stripe.signForTest(payload));
    assert.equal(again.status, 200);
    assert.equal(await s.dataSource.getRepository(Order).countBy({ checkoutSessionId: paid.id }), 1);
    assert.equal(await s.dataSource.getRepository(ProcessorEvent).countBy({ eventId: (JSON.parse(payload) as { id: string }).id }), 1);
    assert.deepEqual((await reconcile(s.dataSource, 'live')).differences.filter((d) => d.id === order.publicId), []);
  });

  it('a forged, unsigned or stale event is 400 and changes nothing; an event for another amount or currency is refunded and never recorded; an expired attempt gives the name back', async () => {
    const s = getStack();
    const { sessionId } = await liveSession(9_900);
    const started = await startHostedPayment(deps, sessionId, { name: 'B', email: 'b@example.com', registrant: {}, browser: 'browser-b' }, { returnUrl: `${baseUrl}/r`, cancelUrl: `${baseUrl}/c` });
    assert.equal(started.kind, 'redirect');
    const good = event('checkout.session.completed', sessionId, 1, 9_900);
    const forger = new StripeCheckout({ secretKey: 'sk_test_123', webhookSecret: 'whsec_not_ours' });
    for (const [what, signature] of [
      ['unsigned', undefined],
      ['signed with another secret', forger.signForTest(good)],
      ['stale (signed 10 minutes ago)', stripe.signForTest(good, Math.floor(Date.now() / 1000) - 600)],
    ] as const) {
      const res = await send(good, signature);
      assert.equal(res.status, 400, what);
    }
    const tampered = good.replace('"amount_total":9900', '"amount_total":1');
    assert.equal((await send(tampered, stripe.signForTest(good))).status, 400, 'a body changed after signing');
    assert.equal((await session(sessionId)).status, 'open', 'nothing recorded');
    assert.ok((await session(sessionId)).payingSince);

    // Another amount: refunded (stripe-mock validates the refund request), never recorded, the name back.
    const other = event('checkout.session.completed', sessionId, 1, 9_901);
    assert.equal((await send(other, stripe.signForTest(other))).status, 200);
    const after = await session(sessionId);
    assert.deepEqual([after.status, after.payingSince, after.orderId], ['open', null, null]);
    assert.equal((await s.dataSource.getRepository(ProcessorEvent).findOneByOrFail({ eventId: (JSON.parse(other) as { id: string }).id })).outcome, 'refused_amount');

    // A new attempt that expires at Stripe: released.
    assert.equal((await startHostedPayment(deps, sessionId, { name: 'B', email: 'b@example.com', registrant: {}, browser: 'browser-b' }, { returnUrl: `${baseUrl}/r`, cancelUrl: `${baseUrl}/c` })).kind, 'redirect');
    const expired = event('checkout.session.expired', sessionId, 2, 9_900);
    assert.equal((await send(expired, stripe.signForTest(expired))).status, 200);
    assert.equal((await session(sessionId)).payingSince, null);
    assert.equal((await s.dataSource.getRepository(Domain).findOneByOrFail({ id: after.domainId })).status, 'listed');
  });
  it('a live sale whose transfer fails: the buyer is refunded through Stripe (stripe-mock validates the refund, keyed refund:<order>), charge.refunded confirms it once, reconcile is clean', async () => {
    const s = getStack();
    const { sessionId } = await liveSession(12_300);
    assert.equal((await startHostedPayment({ ...deps, workflows: { client: s.env.client, taskQueue: 'no-worker-serves-this' } }, sessionId, { name: 'C', email: 'c@example.com', registrant: {}, browser: 'browser-c' }, { returnUrl: `${baseUrl}/r`, cancelUrl: `${baseUrl}/c` })).kind, 'redirect');
    const completed = event('checkout.session.completed', sessionId, 1, 12_300);
    // Recorded through the same handler the endpoint runs, with this test's own (unserved) fulfilment queue.
    const unserved = { ...deps, workflows: { client: s.env.client, taskQueue: 'no-worker-serves-this' } };
    const payload = JSON.parse(completed) as { data: { object: { payment_intent: string } } };
    assert.equal(await recordHostedPayment(unserved, { kind: 'paid', sessionPublicId: sessionId, attempt: 1, paymentRef: payload.data.object.payment_intent, amountCents: 12_300, currency: 'usd' }, () => undefined), 'recorded');
    const order = await s.dataSource.getRepository(Order).findOneByOrFail({ id: (await session(sessionId)).orderId! });
    await s.env.client.workflow.getHandle(orderWorkflowId(order.publicId)).terminate('this test moves the order itself');
    await advanceOrderThrough(order.id, ['DOMAIN_LOCKED', 'TRANSFER_FAILED'], { hosted: { live: stripe } });
    const booked = () => s.dataSource.getRepository(LedgerPosting).countBy({ idempotencyKey: `card:${order.externalPaymentRef}:refunded` });
    assert.equal(await booked(), 1, 'refunded through Stripe and booked');
    const refunded = JSON.stringify({ id: `evt_${randomBytes(12).toString('hex')}`, object: 'event', api_version: '2025-01-27.acacia', created: Math.floor(Date.now() / 1000), type: 'charge.refunded', data: { object: { id: `ch_${randomBytes(8).toString('hex')}`, object: 'charge', payment_intent: order.externalPaymentRef, amount: 12_300, amount_refunded: 12_300, currency: 'usd', refunded: true } } });
    assert.equal((await send(refunded, stripe.signForTest(refunded))).status, 200);
    assert.equal(await booked(), 1, 'once');
    assert.deepEqual((await reconcile(s.dataSource, 'live')).differences.filter((d) => d.id === order.publicId), []);
  });
  it('the sweep asks Stripe about a hosted attempt whose events were lost: still open, it waits; paid, it records the sale (its fulfilment started by the sweep)', async () => {
    const s = getStack();
    const { sessionId } = await liveSession(15_500);
    assert.equal((await startHostedPayment(deps, sessionId, { name: 'E', email: 'e@example.com', registrant: {}, browser: 'browser-e' }, { returnUrl: `${baseUrl}/r`, cancelUrl: `${baseUrl}/c` })).kind, 'redirect');
    const out = await session(sessionId);
    const processorSessionId = out.payingDetails?.processorSessionId;
    assert.ok(processorSessionId?.startsWith('cs_test_'), 'the attempt keeps its Checkout Session');
    // No event came; the attempt has been out for 11 minutes.
    await s.dataSource.getRepository(CheckoutSession).update({ id: out.id }, { payingSince: () => "now() - interval '11 minutes'" });
    const sweepWith = (processor: StripeCheckout) => sweepCardMoney({ hosted: { live: processor } }, 120);
    // stripe-mock answers the Checkout Session as open (it keeps no state): nothing changes.
    await sweepWith(stripe);
    assert.ok((await session(sessionId)).payingSince, 'still out while Stripe says open');
    // Stripe's answer once the buyer paid: the real request goes to stripe-mock (validated), its answer as Stripe gives it after payment.
    const paymentRef = `pi_${randomBytes(12).toString('hex')}`;
    const paidAtStripe = Object.assign(Object.create(stripe) as StripeCheckout, {
      retrieveAttempt: async (id: string) => ({ ...(await stripe.retrieveAttempt(id)), status: 'complete' as const, paid: true, paymentRef, amountCents: 15_500, currency: 'usd' }),
    });
    assert.ok((await sweepWith(paidAtStripe)) >= 1);
    const paid = await session(sessionId);
    assert.equal(paid.status, 'complete');
    assert.equal((await s.dataSource.getRepository(CheckoutPayment).findOneByOrFail({ sessionId: paid.id })).paymentRef, paymentRef);
    assert.equal((await s.dataSource.getRepository(Order).findOneByOrFail({ id: paid.orderId! })).workflowStarted, false, 'its fulfilment is the sweep\'s next step (startUnstartedFulfilments)');
  });

  it('disputes: charge.dispute.created holds the amount and tells the partner; closed lost reverses the sale as a refund does, closed won releases it; each once, each reconciled', async () => {
    const s = getStack();
    /** A live sale recorded from its event and completed (its steps run here), as the processor's payment. */
    const completedSale = async (price: number) => {
      const live = await liveSession(price);
      const unserved = { ...deps, workflows: { client: s.env.client, taskQueue: 'no-worker-serves-this' } };
      assert.equal((await startHostedPayment(unserved, live.sessionId, { name: 'D', email: 'd@example.com', registrant: {}, browser: 'browser-d' }, { returnUrl: `${baseUrl}/r`, cancelUrl: `${baseUrl}/c` })).kind, 'redirect');
      const paymentRef = `pi_${randomBytes(12).toString('hex')}`;
      assert.equal(await recordHostedPayment(unserved, { kind: 'paid', sessionPublicId: live.sessionId, attempt: 1, paymentRef, amountCents: price, currency: 'usd' }, () => undefined), 'recorded');
      const order = await s.dataSource.getRepository(Order).findOneByOrFail({ id: (await session(live.sessionId)).orderId! });
      await s.env.client.workflow.getHandle(orderWorkflowId(order.publicId)).terminate('this test moves the order itself');
      await advanceOrderThrough(order.id, TO_COMPLETED, { hosted: { live: stripe } });
      return { ...live, order, paymentRef };
    };
    const disputeEvent = (type: 'charge.dispute.created' | 'charge.dispute.closed', disputeId: string, paymentRef: string, amount: number, status: string) =>
      JSON.stringify({ id: `evt_${randomBytes(12).toString('hex')}`, object: 'event', api_version: '2025-01-27.acacia', created: Math.floor(Date.now() / 1000), type, data: { object: { id: disputeId, object: 'dispute', amount, currency: 'usd', payment_intent: paymentRef, charge: `ch_${randomBytes(6).toString('hex')}`, reason: 'fraudulent', status } } });
    const deliver = async (payload: string) => assert.equal((await send(payload, stripe.signForTest(payload))).status, 200);
    const postings = (disputeId: string) =>
      s.dataSource.getRepository(LedgerPosting).createQueryBuilder('p').innerJoin(CardDispute, 'd', "p.idempotency_key LIKE 'dispute:' || d.id || ':%'").where('d.processor_dispute_id = :disputeId', { disputeId }).orderBy('p.kind').getMany();
    const eventTypes = async (client: PartnerClient, orderPublicId: string) =>
      (await client.get<{ data: Array<{ type: string; data: { public_id?: string; dispute?: { outcome: string | null } } }> }>('/api/partner/v1/events?limit=100')).body.data.filter((e) => e.data.public_id === orderPublicId && e.type.startsWith('order.dispute_')).map((e) => `${e.type}:${e.data.dispute?.outcome ?? 'open'}`);

    const lost = await completedSale(40_000);
    const lostId = `dp_${randomBytes(8).toString('hex')}`;
    const opened = disputeEvent('charge.dispute.created', lostId, lost.paymentRef, 40_000, 'needs_response');
    await deliver(opened);
    await deliver(disputeEvent('charge.dispute.created', lostId, lost.paymentRef, 40_000, 'needs_response'));
    assert.deepEqual((await postings(lostId)).map((p) => p.kind), ['dispute_opened'], 'held once');
    assert.ok((await openDisputes(s.dataSource, 'live')).some((d) => d.order_id === lost.order.publicId && d.amount_cents === 40_000 && d.reason === 'fraudulent'), 'operators see it open');
    assert.deepEqual(await eventTypes(lost.client, lost.order.publicId), ['order.dispute_opened:open']);
    await deliver(disputeEvent('charge.dispute.closed', lostId, lost.paymentRef, 40_000, 'lost'));
    await deliver(disputeEvent('charge.dispute.closed', lostId, lost.paymentRef, 40_000, 'lost'));
    assert.deepEqual((await postings(lostId)).map((p) => p.kind), ['dispute_lost', 'dispute_opened']);
    assert.equal((await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: lost.order.id })).status, 'reversed', 'the sale reversed as a refund is');
    assert.deepEqual(await eventTypes(lost.client, lost.order.publicId), ['order.dispute_opened:open', 'order.dispute_closed:lost']);

    const won = await completedSale(41_000);
    const wonId = `dp_${randomBytes(8).toString('hex')}`;
    await deliver(disputeEvent('charge.dispute.created', wonId, won.paymentRef, 41_000, 'needs_response'));
    await deliver(disputeEvent('charge.dispute.closed', wonId, won.paymentRef, 41_000, 'won'));
    assert.deepEqual((await postings(wonId)).map((p) => p.kind), ['dispute_opened', 'dispute_won']);
    assert.equal((await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: won.order.id })).status, 'completed');
    assert.deepEqual(await eventTypes(won.client, won.order.publicId), ['order.dispute_opened:open', 'order.dispute_closed:won']);
    assert.equal((await openDisputes(s.dataSource, 'live')).filter((d) => [lost.order.publicId, won.order.publicId].includes(d.order_id)).length, 0);

    const report = await reconcile(s.dataSource, 'live');
    const dispIds = (await s.dataSource.getRepository(CardDispute).findBy({ processorDisputeId: In([lostId, wonId]) })).map((d) => d.publicId);
    assert.deepEqual(report.differences.filter((d) => [lost.order.publicId, won.order.publicId, ...dispIds].includes(d.id)), []);
  });
});
