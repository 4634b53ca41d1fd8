import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { LedgerPosting } from '../../src/db/entities/ledger-posting';
import { ReferralLink } from '../../src/db/entities/referral';
import { recordReferredSale } from '../../src/referral/commissions';
import { startReferralCommission } from '../../src/checkout/sessions';
import { PartnerClient } from '../../src/client/partner-client';
import { brokerableName, openCase } from '../helpers/brokerage';
import { completedSale } from '../helpers/money';
import { freshDomain, order, quote } from '../helpers/orders';
import { affiliatePartner } from '../helpers/referral';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

type Answer = { object: string; id: string; fired: string };
type Err = { error: { code: string; message: string } };
const PATH = '/api/partner/v1/sandbox/fast-forward';

/**
 * Sandbox fast-forward (CONTRACT §14): each object kind's wait ends now, as if its time had passed,
 * and the answer comes once the step it leads to is done. No time is skipped here: the waits are
 * minutes to days long, and each ends by the update alone.
 */
describe('sandbox fast-forward: every Temporal wait a partner depends on ends now', () => {
  ownTemporal();

  it('a quote expires: the order with it is 422 quote_expired and the name is listed again; a second call is 409; live is 403 sandbox_only; another partner’s is 404; the scope is the one that reads it', async () => {
    const { client, partnerId } = await newPartner();
    const domain = await freshDomain();
    const q = await quote(client, domain.name);
    assert.equal(q.status, 201, q.text);

    const other = await newPartner();
    assert.equal((await other.client.post<Err>(PATH, { object: 'quote', id: q.body.quote_id })).status, 404, 'another partner’s quote');
    const embedOnly = new PartnerClient(getStack().baseUrl, await getStack().credentials.issue({ partnerId, environment: 'sandbox', scopes: ['embed'], rateLimitPerSecond: 1000 }));
    const forbidden = await embedOnly.post<Err>(PATH, { object: 'quote', id: q.body.quote_id });
    assert.deepEqual([forbidden.status, forbidden.body.error.code], [403, 'forbidden']);
    const live = new PartnerClient(getStack().baseUrl, await getStack().credentials.issue({ partnerId, environment: 'live', scopes: ['buy'], rateLimitPerSecond: 1000 }));
    const refused = await live.post<Err>(PATH, { object: 'quote', id: q.body.quote_id });
    assert.deepEqual([refused.status, refused.body.error.code], [403, 'sandbox_only']);
    // Whatever the body: a live credential hears first that the route is not for it.
    for (const body of [{}, { object: 'invoice' }]) {
      const anyBody = await live.post<Err>(PATH, body);
      assert.deepEqual([anyBody.status, anyBody.body.error.code], [403, 'sandbox_only'], JSON.stringify(body));
    }
    const bad = await client.post<Err>(PATH, { object: 'invoice', id: q.body.quote_id });
    assert.deepEqual([bad.status, bad.body.error.code], [400, 'validation_error']);

    const ff = await client.post<Answer>(PATH, { object: 'quote', id: q.body.quote_id });
    assert.equal(ff.status, 200, ff.text);
    assert.deepEqual(ff.body, { object: 'quote', id: q.body.quote_id, fired: 'quote_expiry' });
    const late = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'ff-test', sale_price_cents: q.body.price_cents });
    assert.deepEqual([late.status, (late.body as unknown as Err).error.code], [422, 'quote_expired']);
    assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${domain.name}`)).body.available, true, 'listed again');
    const again = await client.post<Err>(PATH, { object: 'quote', id: q.body.quote_id });
    assert.deepEqual([again.status, again.body.error.code], [409, 'conflict']);
  });

  it('a checkout session expires: the session reads expired', async () => {
    const { client } = await newPartner();
    const session = await client.post<{ session_id: string; status: string }>('/api/partner/v1/checkout-session', { domain: (await freshDomain()).name });
    assert.equal(session.status, 201, session.text);
    const ff = await client.post<Answer>(PATH, { object: 'checkout_session', id: session.body.session_id });
    assert.equal(ff.status, 200, ff.text);
    assert.equal(ff.body.fired, 'session_expiry');
    assert.equal((await client.get<{ status: string }>(`/api/partner/v1/checkout-session/${session.body.session_id}`)).body.status, 'expired');
  });

  it('an order waiting on its transfer reaches its 5-day deadline: TRANSFER_FAILED now', async () => {
    const { client } = await newPartner();
    const q = await quote(client, (await freshDomain()).name);
    const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: `stall_transfer-${randomUUID()}`, sale_price_cents: q.body.price_cents });
    assert.equal(o.status, 201, o.text);
    // Real time: nothing here lets the test server skip time.
    await waitFor(async () => (await client.get<{ status: string }>(`/api/partner/v1/orders/${o.body.public_id}`)).body.status, (status) => status === 'TRANSFER_PENDING', 20_000, 'the transfer to be pending');
    const ff = await client.post<Answer>(PATH, { object: 'order', id: o.body.public_id });
    assert.equal(ff.status, 200, ff.text);
    assert.equal(ff.body.fired, 'transfer_deadline');
    const after = await client.get<{ status: string; failure_reason: string }>(`/api/partner/v1/orders/${o.body.public_id}`);
    assert.equal(after.body.status, 'TRANSFER_FAILED');
    assert.match(after.body.failure_reason, /5 days/);
    assert.equal((await client.post(PATH, { object: 'order', id: o.body.public_id })).status, 409, 'a final order waits on nothing');
  });

  it('a brokerage case’s next timer fires: a new case closes as 30 days quiet', async () => {
    const { client } = await newPartner();
    const opened = await openCase(client, { domain: brokerableName('ffcase') });
    const ff = await client.post<Answer>(PATH, { object: 'brokerage_case', id: opened.case_id });
    assert.equal(ff.status, 200, ff.text);
    assert.equal(ff.body.fired, 'brokerage_timer');
    const c = await client.get<{ status: string; outcome: { result: string; reason: string } | null }>(`/api/partner/v1/brokerage/${opened.case_id}`);
    assert.equal(c.body.status, 'closed', JSON.stringify(c.body));
    assert.match(c.body.outcome?.reason ?? '', /30 days/);
  });

  it('a referral sale’s 30-day window ends: its commission accrues now', async () => {
    const s = getStack();
    const { partnerId, client } = await affiliatePartner();
    const link = (await client.post<{ link_id: string }>('/api/partner/v1/links', { kind: 'generic' })).body;
    const { code } = await s.dataSource.getRepository(ReferralLink).findOneByOrFail({ publicId: link.link_id });
    const sold = await completedSale((await newPartner()).partnerId, new Date().toISOString(), { paymentModel: 'service_collected' });
    const sale = (await s.dataSource.transaction((tx) => recordReferredSale(tx, { linkCode: code, environment: 'sandbox', sellerPartnerId: 'the house', orderId: sold.id, buyerEmail: 'b@example.com', domain: 'x.com', amountCents: 10_000, currency: 'USD', at: new Date() })))!;
    await startReferralCommission(s.appDeps.workflows, s.dataSource, sale.publicId, partnerId, 'x.com', 'sandbox');
    const ff = await client.post<Answer>(PATH, { object: 'referral_sale', id: sale.publicId });
    assert.equal(ff.status, 200, ff.text);
    assert.equal(ff.body.fired, 'referral_window');
    assert.equal(await s.dataSource.getRepository(LedgerPosting).countBy({ referralSaleId: sale.id, kind: 'referral_accrued' }), 1, 'accrued once');
  });
});
