import assert from 'node:assert/strict';
import { advanceOrder } from '../../src/orders/fulfilment';
import { requestRefund } from '../../src/orders/refunds';
import { ApiError } from '../../src/api/errors';
import { getStack, newPartner } from '../helpers/stack';
import { buy, count, fulfilmentResult, type OrderBody } from '../helpers/orders';

type RefundBody = { refund_id: string; order_id: string; status: string; amount_cents: number; currency: string; created_at: string };

describe('refunds of partner-collected orders (only before TRANSFER_COMPLETED)', () => {
  it('before completion: 201, the transfer stops, the domain is listed again and the order ends REFUNDED; asking again answers the same refund with 200', async () => {
    const { client } = await newPartner();
    const o = await buy(client, 'pay_stall_transfer_refund');
    const res = await client.post<RefundBody>('/api/partner/v1/refunds', { order_id: o.public_id, reason: 'buyer changed their mind' });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.refund_id, /^ref_/);
    assert.equal(res.body.order_id, o.public_id);
    assert.equal(res.body.amount_cents, o.sale_price_cents);
    assert.equal(res.body.currency, 'USD');
    assert.equal(res.body.status, 'succeeded');

    assert.deepEqual(await fulfilmentResult(o.public_id), { status: 'REFUNDED' });
    const after = (await client.get<OrderBody>(`/api/partner/v1/orders/${o.public_id}`)).body;
    assert.equal(after.status, 'REFUNDED');
    assert.equal(after.timeline.at(-1)?.status, 'REFUNDED');
    assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${o.domain}`)).body.available, true);
    const [transfer] = (await getStack().dataSource.query(
      'SELECT t.state FROM sandbox_registrar_transfers t JOIN orders o ON o.id = t.order_id WHERE o.public_id = $1',
      [o.public_id],
    )) as Array<{ state: string }>;
    assert.ok(!transfer || transfer.state === 'cancelled', `transfer ${transfer?.state}`);

    const again = await client.post<RefundBody>('/api/partner/v1/refunds', { order_id: o.public_id });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, res.body);
    assert.equal(await count(`SELECT 1 FROM events WHERE type = 'order.refunded' AND data->>'public_id' = $1`, [o.public_id]), 1);
  });

  it('at or after TRANSFER_COMPLETED it is 422 refund_not_allowed', async () => {
    const { client } = await newPartner();
    const o = await buy(client);
    assert.equal((await fulfilmentResult(o.public_id)).status, 'TRANSFER_COMPLETED');
    const res = await client.post('/api/partner/v1/refunds', { order_id: o.public_id });
    assert.equal(res.status, 422);
    assert.equal((res.body as { error: { code: string } }).error.code, 'refund_not_allowed');
  });

  it("an unknown order, or another partner's, is 404 not_found; a bad body is 400", async () => {
    const { client } = await newPartner();
    const other = await newPartner();
    const theirs = await buy(other.client);
    assert.equal((await client.post('/api/partner/v1/refunds', { order_id: theirs.public_id })).status, 404);
    assert.equal((await client.post('/api/partner/v1/refunds', { order_id: 'ord_nope' })).status, 404);
    assert.equal((await client.post('/api/partner/v1/refunds', {})).status, 400);
    await fulfilmentResult(theirs.public_id);
  });

  it('a refund racing the last transfer step has exactly one winner, and the refund caller learns which', async () => {
    const s = getStack();
    for (let round = 0; round < 8; round++) {
      const { client, partnerId } = await newPartner();
      const o = await buy(client, 'pay_stall_transfer_race');
      // Let the workflow reach TRANSFER_PENDING, then race the two final moves directly.
      for (let i = 0; i < 200 && (await client.get<OrderBody>(`/api/partner/v1/orders/${o.public_id}`)).body.status !== 'TRANSFER_PENDING'; i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      const [{ id }] = (await s.dataSource.query('SELECT id FROM orders WHERE public_id = $1', [o.public_id])) as Array<{ id: string }>;
      const [completion, refund] = await Promise.allSettled([
        advanceOrder(s.dataSource, { orderId: id, to: 'TRANSFER_COMPLETED', at: new Date().toISOString() }),
        requestRefund(s.dataSource, { partnerId, environment: 'sandbox', orderPublicId: o.public_id }),
      ]);
      assert.equal(completion.status, 'fulfilled');
      const completed = completion.status === 'fulfilled' && completion.value.status === 'TRANSFER_COMPLETED';
      const refunded = refund.status === 'fulfilled';
      assert.notEqual(completed, refunded, 'exactly one of them wins');
      if (!refunded) assert.equal(((refund as PromiseRejectedResult).reason as ApiError).code, 'refund_not_allowed');
      const final = (await client.get<OrderBody>(`/api/partner/v1/orders/${o.public_id}`)).body.status;
      assert.equal(final, completed ? 'TRANSFER_COMPLETED' : 'REFUNDED');
      assert.equal(await count('SELECT 1 FROM transactions WHERE partner_id = $1', [partnerId]), completed ? 1 : 0);
      assert.equal(await count('SELECT 1 FROM refunds WHERE partner_id = $1', [partnerId]), refunded ? 1 : 0);
      await s.env.client.workflow.getHandle(`order:${o.public_id}`).terminate('race test done');
    }
  });
});
