import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { encodeCursor } from '../../src/api/lists';
import { newPartner } from '../helpers/stack';
import { affiliatePartner } from '../helpers/referral';

type Answer = { status: number; body: unknown; text: string };
const code = (res: Answer) => (res.body as { error?: { code: string } }).error?.code;

describe('odd but possible input: a clear 4xx or the plain meaning, never a 500', () => {
  it('a NUL character in a path, query or body value is 400 validation_error naming the field', async () => {
    const { client } = await newPartner();
    const cases: Array<[Promise<Answer>, string]> = [
      [client.get('/api/partner/v1/orders/%00'), 'path.public_id'],
      [client.get('/api/partner/v1/checkout-session/ses%00x'), 'path.session_id'],
      [client.get('/api/partner/v1/brokerage/%00'), 'path.case_id'],
      [client.get('/api/partner/v1/orders?domain=a%00.com'), 'query.domain'],
      [client.post('/api/partner/v1/refunds', { order_id: 'ord_\u0000', reason: 'x' }), 'body.order_id'],
      [client.post('/api/partner/v1/refunds', { order_id: 'ord_x', reason: 'no\u0000pe' }), 'body.reason'],
      [client.post('/api/partner/v1/orders', { quote_id: 'quo_\u0000', external_payment_ref: 'p', sale_price_cents: 1 }, { headers: { 'Idempotency-Key': randomUUID() } }), 'body.quote_id'],
    ];
    for (const [call, field] of cases) {
      const res = await call;
      assert.deepEqual([res.status, code(res)], [400, 'validation_error'], res.text);
      const details = (res.body as { error: { details: Array<{ field: string }> } }).error.details;
      assert.equal(details[0].field.split('.')[0], field.split('.')[0], res.text);
    }
  });

  it('a cursor that decodes but names no real instant is 400, not a failed query', async () => {
    const { client } = await newPartner();
    const feb30 = encodeCursor({ c: '2026-02-30T00:00:00.000000Z', i: randomUUID() });
    const hour24 = encodeCursor({ c: '2026-01-01T24:00:00.000000Z', i: randomUUID() });
    for (const path of [
      `/api/partner/v1/orders?cursor=${feb30}`,
      `/api/partner/v1/transactions?cursor=${hour24}`,
      `/api/partner/v1/payouts?cursor=${feb30}`,
      `/api/partner/v1/brokerage?cursor=${feb30}`,
      `/api/partner/v1/settlements?cursor=${encodeCursor({ p: '2026-13-01' })}`,
      '/api/partner/v1/transactions?from=2026-02-30',
      '/api/partner/v1/transactions?to=2026-11-21T24:00:00Z',
    ]) {
      const res = await client.get(path);
      assert.deepEqual([res.status, code(res)], [400, 'validation_error'], `${path}: ${res.text}`);
    }
  });

  it('a query parameter sent empty counts as absent (the contract writes `?cursor=&limit=`)', async () => {
    const { client } = await newPartner();
    const events = await client.get<{ data: unknown[]; next_cursor: string }>('/api/partner/v1/events?cursor=&limit=');
    assert.equal(events.status, 200, events.text);
    assert.equal(typeof events.body.next_cursor, 'string');
    const tx = await client.get<{ data: unknown[] }>('/api/partner/v1/transactions?from=&to=&status=&payment_model=');
    assert.equal(tx.status, 200, tx.text);
    assert.equal((await client.get('/api/partner/v1/orders?limit=&cursor=')).status, 200);
    const missing = await client.get('/api/partner/v1/availability?domain=');
    assert.deepEqual([missing.status, code(missing)], [400, 'validation_error'], 'a required one is still required');
  });

  it('an optional body field sent as null counts as absent; a required one is still required', async () => {
    const { client } = await newPartner();
    const refund = await client.post('/api/partner/v1/refunds', { order_id: 'ord_nobody', reason: null });
    assert.deepEqual([refund.status, code(refund)], [404, 'not_found'], refund.text);
    const quote = await client.post('/api/partner/v1/quotes', { domain: null });
    assert.deepEqual([quote.status, code(quote)], [400, 'validation_error'], quote.text);
  });
});

describe('referral lists page by the last item shown', () => {
  it('a link made between two pages of GET /links neither repeats nor skips one; a cursor naming no item is 400', async () => {
    const { client } = await affiliatePartner();
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await client.post<{ link_id?: string; url: string }>('/api/partner/v1/links', { kind: 'generic', campaign: `c${i}` });
      assert.equal(res.status, 201, res.text);
      made.push(res.body.url);
      // A deliberate pause, so that each link is made at a later time than the one before: the
      // list is newest first, by creation time.
      const laterCreationMs = 5;
      await new Promise((r) => setTimeout(r, laterCreationMs));
    }
    const first = await client.get<{ data: Array<{ url: string }>; next_cursor: string | null }>('/api/partner/v1/links?limit=2');
    assert.deepEqual(first.body.data.map((l) => l.url), [made[2], made[1]]);
    assert.ok(first.body.next_cursor);
    assert.equal((await client.post('/api/partner/v1/links', { kind: 'generic', campaign: 'late' })).status, 201);
    const second = await client.get<{ data: Array<{ url: string }>; next_cursor: string | null }>(`/api/partner/v1/links?limit=2&cursor=${first.body.next_cursor}`);
    assert.deepEqual(second.body.data.map((l) => l.url), [made[0]]);
    assert.equal(second.body.next_cursor, null);
    const forged = await client.get(`/api/partner/v1/links?cursor=${encodeCursor({ k: randomUUID() })}`);
    assert.deepEqual([forged.status, code(forged)], [400, 'validation_error']);
  });
});
