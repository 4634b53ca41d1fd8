import assert from 'node:assert/strict';
import { Quote } from '../../src/db/entities/quote';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { createPartner } from '../../src/partners/partners';
import { SCOPES } from '../../src/auth/scopes';
import { PartnerClient } from '../../src/client/partner-client';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { freshDomain, fulfilmentResult, order, quote, quoteResult } from '../helpers/orders';
import { Domain } from '../../src/db/entities/domain';
import { importInventory } from '../../src/discovery/inventory';
import { recordHistory } from '../helpers/histories';

describe('quotes: a firm price and a 10-minute reservation (CONTRACT §6)', () => {
  ownTemporal();
  it('answers 201 with the price, expires_at 10 minutes on and a token that verifies offline against the published keys', async () => {
    const { client, partnerId } = await newPartner();
    const domain = await freshDomain();
    const before = Date.now();
    const res = await quote(client, domain.name.toUpperCase());
    const after = Date.now();
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.domain, domain.name);
    assert.equal(res.body.price_cents, domain.price);
    assert.equal(res.body.currency, 'USD');
    assert.match(res.body.quote_id, /^quo_/);
    // 10 minutes from the moment the quote was made, somewhere between the request's start and its
    // answer (however long a busy machine took), give or take the second expires_at is written in.
    const expiresAt = Date.parse(res.body.expires_at);
    assert.ok(expiresAt >= before + 600_000 - 1_000 && expiresAt <= after + 600_000 + 1_000, `expires ${expiresAt - before} ms after the request was sent, ${expiresAt - after} ms after its answer`);

    const jwks = (await (await fetch(`${getStack().baseUrl}/api/partner/v1/quote-keys`)).json()) as { keys: [] };
    const { payload, protectedHeader } = await jwtVerify(res.body.quote_token, createLocalJWKSet(jwks), { issuer: 'domain-partner-api', currentDate: new Date() });
    assert.equal(protectedHeader.alg, 'EdDSA');
    assert.equal(payload.sub, res.body.quote_id);
    assert.equal(payload.domain, domain.name);
    assert.equal(payload.price_cents, domain.price);
    assert.equal(payload.partner_id, partnerId);
    assert.equal(payload.exp, Math.floor(Date.parse(res.body.expires_at) / 1000));
  });

  it('reserves the domain: available is false for everyone and another partner\'s quote is 409 conflict', async () => {
    const holder = await newPartner();
    const other = await newPartner();
    const domain = await freshDomain();
    const first = await quote(holder.client, domain.name);
    assert.equal(first.status, 201);
    const availability = await other.client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${domain.name}`);
    assert.equal(availability.body.available, false);
    const second = await quote(other.client, domain.name);
    assert.equal(second.status, 409);
    const otherError = (second.body as unknown as { error: { code: string; message: string } }).error;
    assert.equal(otherError.code, 'conflict');
    assert.ok(!otherError.message.includes(first.body.quote_id), 'another partner is not told the holder\'s quote');
    const again = await quote(holder.client, domain.name);
    assert.equal(again.status, 409, 'one active quote per name, also for its holder');
    // The holder whose first answer was lost learns its quote's id, and can still order with it.
    const error = (again.body as unknown as { error: { code: string; message: string; details?: unknown } }).error;
    assert.equal(error.code, 'conflict');
    assert.ok(error.message.includes(first.body.quote_id), error.message);
    assert.equal(error.details, undefined, 'details are for validation errors (CONTRACT §2)');
  });

  it('an unlisted domain is 404, a bad body 400', async () => {
    const { client } = await newPartner();
    assert.equal((await quote(client, 'never-heard-of-it.com')).status, 404);
    assert.equal((await client.post('/api/partner/v1/quotes', {})).status, 400);
    assert.equal((await client.post('/api/partner/v1/quotes', '{"domain":')).status, 400);
  });

  it('a partner that is not merchant of record gets 403 merchant_of_record_required, before its body or Idempotency-Key is looked at', async () => {
    const s = getStack();
    const partner = await createPartner(s.dataSource, `not-mor-${Date.now()}`, { merchantOfRecord: false });
    const issued = await s.credentials.issue({ partnerId: partner.id, environment: 'sandbox', scopes: [...SCOPES], rateLimitPerSecond: 1000 });
    const client = new PartnerClient(s.baseUrl, { keyId: issued.keyId, secret: issued.secret });
    const res = await quote(client, (await freshDomain()).name);
    assert.equal(res.status, 403);
    assert.equal((res.body as unknown as { error: { code: string } }).error.code, 'merchant_of_record_required');
    const o = await order(client, { quote_id: 'quo_x', external_payment_ref: 'p', sale_price_cents: 1 });
    assert.equal((o.body as unknown as { error: { code: string } }).error.code, 'merchant_of_record_required');
    // CONTRACT §8: checked right after the scope, so a bad body or a missing key changes nothing.
    const code = (r: { status: number; body: unknown }) => [r.status, (r.body as { error?: { code: string } }).error?.code];
    for (const res of [
      await client.post('/api/partner/v1/quotes', {}),
      await client.post('/api/partner/v1/quotes', '{"domain":'),
      await client.post('/api/partner/v1/orders', { quote_id: 'quo_x' }),
      await client.post('/api/partner/v1/orders', '{', { headers: { 'Idempotency-Key': 'not-a-uuid' } }),
    ]) assert.deepEqual(code(res), [403, 'merchant_of_record_required']);
  });

  it('an order 9 minutes 50 seconds after the quote succeeds', async () => {
    const { client } = await newPartner();
    const q = await quote(client, (await freshDomain()).name);
    await getStack().env.sleep(9 * 60_000 + 50_000);
    const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_on_time', sale_price_cents: q.body.price_cents });
    assert.equal(o.status, 201, o.text);
    assert.equal(await quoteResult(q.body.quote_id), 'consumed');
    await recordHistory(`quote:${q.body.quote_id}`, 'quote-consumed');
  });

  it('a quote holds its price: an import re-prices the name in another currency meanwhile; the order at the quoted price is 201 and is booked, listed and settled at it', async () => {
    const { client } = await newPartner();
    const s = getStack();
    const listed = await freshDomain();
    const q = await quote(client, listed.name);
    assert.equal(q.status, 201, q.text);
    const row = await s.dataSource.getRepository(Domain).findOneByOrFail({ environment: 'sandbox', name: listed.name });
    await importInventory(s.dataSource, 'sandbox', [
      { name: row.name, category: row.category, buy_now_price_cents: q.body.price_cents * 2 + 100, floor_price_cents: 100, currency: 'EUR', status: 'listed', active_site: false },
    ]);
    const wrong = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_new_price', sale_price_cents: q.body.price_cents * 2 + 100 });
    assert.equal(wrong.status, 422, wrong.text);
    assert.equal((wrong.body as unknown as { error: { code: string } }).error.code, 'price_mismatch');
    const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_quoted_price', sale_price_cents: q.body.price_cents });
    assert.equal(o.status, 201, o.text);
    assert.equal(o.body.sale_price_cents, q.body.price_cents);
    assert.equal(o.body.currency, q.body.currency);
    assert.equal((await fulfilmentResult(o.body.public_id)).status, 'TRANSFER_COMPLETED');
    const txns = await client.get<{ data: Array<{ order_id: string; gross_cents: number; currency: string }>; totals: { gmv_cents: number; currency: string } }>(`/api/partner/v1/transactions?currency=${q.body.currency}`);
    assert.equal(txns.status, 200, txns.text);
    assert.deepEqual(txns.body.data.map((t) => [t.order_id, t.gross_cents, t.currency]), [[o.body.public_id, q.body.price_cents, q.body.currency]]);
    assert.equal(txns.body.totals.gmv_cents, q.body.price_cents);
    const settlements = await client.get<{ data: Array<{ gross_sold_cents: number; currency: string; status: string }> }>('/api/partner/v1/settlements');
    assert.deepEqual(settlements.body.data.map((p) => [p.gross_sold_cents, p.currency]), [[q.body.price_cents, q.body.currency]]);
  });

  it('once the 10 minutes are past the order is 422 quote_expired and the domain is available again', async () => {
    const { client } = await newPartner();
    const domain = await freshDomain();
    const q = await quote(client, domain.name);
    assert.equal(await quoteResult(q.body.quote_id), 'expired');
    await recordHistory(`quote:${q.body.quote_id}`, 'quote-expired');
    const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_late', sale_price_cents: q.body.price_cents });
    assert.equal(o.status, 422);
    assert.equal((o.body as unknown as { error: { code: string } }).error.code, 'quote_expired');
    const availability = await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${domain.name}`);
    assert.equal(availability.body.available, true);
  });

  it('a quote past its expires_at on the database clock is 422 quote_expired even while its timer is late; the timer still releases the name', async () => {
    const s = getStack();
    const { client } = await newPartner();
    const domain = await freshDomain();
    const q = await quote(client, domain.name);
    // The worker is behind: the 10-minute timer has not fired, but the database's clock is past the quote.
    await s.dataSource.getRepository(Quote).update({ publicId: q.body.quote_id }, { createdAt: () => "now() - interval '11 minutes'", expiresAt: () => "now() - interval '1 minute'" });
    const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_late_timer', sale_price_cents: q.body.price_cents });
    assert.equal(o.status, 422, o.text);
    assert.equal((o.body as unknown as { error: { code: string } }).error.code, 'quote_expired');
    assert.equal((await s.dataSource.getRepository(Quote).findOneByOrFail({ publicId: q.body.quote_id })).status, 'active', 'the timer, not the API, ends the reservation');
    assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${domain.name}`)).body.available, false);
    assert.equal(await quoteResult(q.body.quote_id), 'expired');
    assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${domain.name}`)).body.available, true);
  });
});
