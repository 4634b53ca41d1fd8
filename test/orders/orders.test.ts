import assert from 'node:assert/strict';
import { Domain } from '../../src/db/entities/domain';
import { Order } from '../../src/db/entities/order';
import { randomUUID } from 'node:crypto';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { buy, count, freshDomain, fulfilmentResult, order, quote, type OrderBody } from '../helpers/orders';

type ErrorBody = { error: { code: string; request_id: string } };
const code = (body: unknown) => (body as ErrorBody).error.code;

describe('orders: recording a partner-collected sale (CONTRACT §6)', () => {
  ownTemporal();
  it('answers 201 with the order, PAYMENT_RECORDED first in its timeline', async () => {
    const { client } = await newPartner();
    const domain = await freshDomain();
    const q = await quote(client, domain.name);
    const res = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_123', sale_price_cents: domain.price });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.public_id, /^ord_/);
    assert.equal(res.body.status, 'PAYMENT_RECORDED');
    assert.equal(res.body.domain, domain.name);
    assert.equal(res.body.sale_price_cents, domain.price);
    assert.equal(res.body.currency, 'USD');
    assert.equal(res.body.external_payment_ref, 'pay_123');
    assert.equal(res.body.payment_model, 'partner_collected');
    assert.deepEqual(res.body.timeline.map((t) => t.status), ['PAYMENT_RECORDED']);
    const availability = await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${domain.name}`);
    assert.equal(availability.body.available, false);
  });

  it('a sale price other than the listing price is 422 price_mismatch', async () => {
    const { client } = await newPartner();
    const q = await quote(client, (await freshDomain()).name);
    const res = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'p', sale_price_cents: q.body.price_cents - 1 });
    assert.equal(res.status, 422);
    assert.equal(code(res.body), 'price_mismatch');
  });

  it("an unknown quote, or another partner's, is 404 not_found", async () => {
    const { client } = await newPartner();
    const other = await newPartner();
    const q = await quote(other.client, (await freshDomain()).name);
    assert.equal(code((await order(client, { quote_id: 'quo_000000000000000000000000', external_payment_ref: 'p', sale_price_cents: 1 })).body), 'not_found');
    const res = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'p', sale_price_cents: q.body.price_cents });
    assert.equal(res.status, 404);
  });

  it('a quote is consumed by one order only', async () => {
    const { client } = await newPartner();
    const q = await quote(client, (await freshDomain()).name);
    assert.equal((await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'first', sale_price_cents: q.body.price_cents })).status, 201);
    const second = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'second', sale_price_cents: q.body.price_cents });
    assert.equal(second.status, 409);
    assert.equal(code(second.body), 'conflict');
  });

  it('a missing or malformed Idempotency-Key, or a bad body, is 400 validation_error and records nothing', async () => {
    const { client, partnerId } = await newPartner();
    const q = await quote(client, (await freshDomain()).name);
    const body = { quote_id: q.body.quote_id, external_payment_ref: 'p', sale_price_cents: q.body.price_cents };
    assert.equal(code((await client.post('/api/partner/v1/orders', body)).body), 'validation_error');
    assert.equal(code((await order(client, body, 'not-a-uuid')).body), 'validation_error');
    assert.equal(code((await order(client, body, '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).body), 'validation_error');
    assert.equal(code((await order(client, { ...body, sale_price_cents: 'ten' as unknown as number })).body), 'validation_error');
    const malformed = await client.post('/api/partner/v1/orders', '{"quote_id": "x",', { headers: { 'Idempotency-Key': randomUUID() } });
    assert.equal(malformed.status, 400);
    assert.equal(await count('SELECT 1 FROM orders WHERE partner_id = $1', [partnerId]), 0);
  });

  it('the same key and body replays the first answer with Idempotent-Replayed; another body is 409 conflict', async () => {
    const { client, partnerId } = await newPartner();
    const q = await quote(client, (await freshDomain()).name);
    const key = randomUUID();
    const body = { quote_id: q.body.quote_id, external_payment_ref: 'pay_idem', sale_price_cents: q.body.price_cents };
    const first = await order(client, body, key);
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const replay = await order(client, body, key);
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, first.body);
    assert.equal(replay.text, first.text, 'the same bytes, keys in the same order');
    const conflict = await order(client, { ...body, external_payment_ref: 'pay_other' }, key);
    assert.equal(conflict.status, 409);
    assert.equal(code(conflict.body), 'conflict');
    assert.equal(await count('SELECT 1 FROM orders WHERE partner_id = $1', [partnerId]), 1);
  });

  it('an error answer is replayed too, with its original request id', async () => {
    const { client } = await newPartner();
    const q = await quote(client, (await freshDomain()).name);
    const key = randomUUID();
    const body = { quote_id: q.body.quote_id, external_payment_ref: 'p', sale_price_cents: 1 };
    const first = await order(client, body, key);
    assert.equal(first.status, 422);
    const replay = await order(client, body, key);
    assert.equal(replay.status, 422);
    assert.deepEqual(replay.body, first.body);
    assert.equal(replay.headers.get('x-request-id'), (first.body as unknown as ErrorBody).error.request_id);
  });

  it('keys are scoped to the partner: another partner may use the same key', async () => {
    const a = await newPartner();
    const b = await newPartner();
    const key = randomUUID();
    const qa = await quote(a.client, (await freshDomain()).name);
    const qb = await quote(b.client, (await freshDomain()).name);
    assert.equal((await order(a.client, { quote_id: qa.body.quote_id, external_payment_ref: 'a', sale_price_cents: qa.body.price_cents }, key)).status, 201);
    assert.equal((await order(b.client, { quote_id: qb.body.quote_id, external_payment_ref: 'b', sale_price_cents: qb.body.price_cents }, key)).status, 201);
  });

  it('two identical requests racing each other make one order', async () => {
    const { client, partnerId } = await newPartner();
    const q = await quote(client, (await freshDomain()).name);
    const key = randomUUID();
    const body = { quote_id: q.body.quote_id, external_payment_ref: 'pay_race', sale_price_cents: q.body.price_cents };
    const answers = await Promise.all(Array.from({ length: 6 }, () => order(client, body, key)));
    assert.deepEqual(answers.map((a) => a.status), [201, 201, 201, 201, 201, 201]);
    assert.equal(new Set(answers.map((a) => a.body.public_id)).size, 1);
    assert.equal(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true').length, 5);
    assert.equal(await count('SELECT 1 FROM orders WHERE partner_id = $1', [partnerId]), 1);
  });

  it("lists the partner's own orders newest first, filtered and paginated; another partner's order is 404", async () => {
    const { client } = await newPartner();
    const other = await newPartner();
    const made: OrderBody[] = [];
    for (let i = 0; i < 3; i++) made.push(await buy(client, `pay_list_${i}`));
    const theirs = await buy(other.client);

    const page1 = await client.get<{ data: OrderBody[]; next_cursor: string | null }>('/api/partner/v1/orders?limit=2');
    assert.equal(page1.status, 200);
    assert.deepEqual(page1.body.data.map((o) => o.public_id), [made[2].public_id, made[1].public_id]);
    assert.ok(page1.body.next_cursor);
    const page2 = await client.get<{ data: OrderBody[]; next_cursor: string | null }>(`/api/partner/v1/orders?limit=2&cursor=${page1.body.next_cursor}`);
    assert.deepEqual(page2.body.data.map((o) => o.public_id), [made[0].public_id]);
    assert.equal(page2.body.next_cursor, null);

    const byDomain = await client.get<{ data: OrderBody[] }>(`/api/partner/v1/orders?domain=${made[1].domain}`);
    assert.deepEqual(byDomain.body.data.map((o) => o.public_id), [made[1].public_id]);
    const today = new Date().toISOString().slice(0, 10);
    const byDate = await client.get<{ data: OrderBody[] }>(`/api/partner/v1/orders?from=${today}&to=${today}`);
    assert.equal(byDate.body.data.length, 3);
    const none = await client.get<{ data: OrderBody[] }>('/api/partner/v1/orders?to=2000-01-01');
    assert.equal(none.body.data.length, 0);
    assert.equal((await client.get('/api/partner/v1/orders?limit=101')).status, 400);
    assert.equal((await client.get('/api/partner/v1/orders?limit=0')).status, 400);
    for (const loose of ['1e1', '0x10', '%205', '5.0', '-1']) assert.equal((await client.get(`/api/partner/v1/orders?limit=${loose}`)).status, 400, `limit=${loose}`);
    assert.equal((await client.get('/api/partner/v1/orders?status=SHIPPED')).status, 400);
    assert.equal((await client.get('/api/partner/v1/orders?from=yesterday')).status, 400);
    assert.equal((await client.get('/api/partner/v1/orders?cursor=bogus')).status, 400);

    assert.equal((await client.get(`/api/partner/v1/orders/${made[0].public_id}`)).status, 200);
    assert.equal((await client.get(`/api/partner/v1/orders/${theirs.public_id}`)).status, 404);
    assert.equal((await client.get('/api/partner/v1/orders/ord_unknown')).status, 404);
  });

  it('reading orders is allowed with either search or buy', async () => {
    const buyer = await newPartner({ scopes: ['buy'] });
    const o = await buy(buyer.client);
    const searcher = await newPartner({ scopes: ['search'], name: undefined });
    assert.equal((await buyer.client.get(`/api/partner/v1/orders/${o.public_id}`)).status, 200);
    assert.equal((await searcher.client.get('/api/partner/v1/orders')).status, 200);
    const neither = await newPartner({ scopes: ['report'] });
    assert.equal((await neither.client.get('/api/partner/v1/orders')).status, 403);
    await fulfilmentResult(o.public_id);
  });

  it('pages exactly, with limit=1, through orders created within one millisecond (microsecond timestamps, equal timestamps)', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    const domain = await s.dataSource.getRepository(Domain).findOneByOrFail({ environment: 'sandbox', name: (await freshDomain()).name });
    const stamps = ['.123000', '.123401', '.123402', '.123402', '.123403', '.123999'].map((us) => `2026-03-01T10:00:00${us}Z`);
    for (const [i, at] of stamps.entries()) {
      await s.dataSource
        .getRepository(Order)
        .createQueryBuilder()
        .insert()
        .values({
          publicId: `ord_samems${i}${randomUUID().slice(0, 8)}`,
          partnerId,
          environment: 'sandbox',
          quoteId: null,
          domainId: domain.id,
          domain: domain.name,
          salePriceCents: 100,
          currency: 'USD',
          externalPaymentRef: 'pay_fixture',
          paymentModel: 'partner_collected',
          commissionBps: 1500,
          status: 'TRANSFER_FAILED',
          failureReason: 'fixture',
          workflowStarted: true,
          createdAt: () => `'${at}'::timestamptz`,
        })
        .execute();
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; text: string; body: { data: OrderBody[]; next_cursor: string | null } } = await client.get(`/api/partner/v1/orders?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200, page.text);
      assert.ok(page.body.data.length <= 1);
      seen.push(...page.body.data.map((o) => o.public_id));
      cursor = page.body.next_cursor;
    } while (cursor && seen.length <= stamps.length);
    const expected = (await s.dataSource.query('SELECT public_id FROM orders WHERE partner_id = $1 ORDER BY created_at DESC, id DESC', [partnerId])) as Array<{ public_id: string }>;
    assert.deepEqual(seen, expected.map((r) => r.public_id));
    assert.equal(seen.length, stamps.length);
  });
});
