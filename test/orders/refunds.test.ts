import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { createApp } from '../../src/api/app';
import { getStack, listen, newPartner, ownTemporal } from '../helpers/stack';
import { buy, count, fulfilmentResult, order, quote, type OrderBody } from '../helpers/orders';
import type { PartnerClient } from '../../src/client/partner-client';
import { recordHistory } from '../helpers/histories';
import { waitFor } from '../helpers/wait';

type RefundBody = { refund_id: string; order_id: string; status: string; amount_cents: number; currency: string; created_at: string };

async function orderState(client: PartnerClient, publicId: string): Promise<OrderBody> {
  return (await client.get<OrderBody>(`/api/partner/v1/orders/${publicId}`)).body;
}

/** How long an order may take to reach TRANSFER_PENDING: its workflow's first steps run in real time. */
const TRANSFER_PENDING_MS = 15_000;

async function available(client: PartnerClient, domain: string): Promise<boolean> {
  return (await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${domain}`)).body.available;
}

async function eventTypes(orderPublicId: string): Promise<string[]> {
  const rows = (await getStack().dataSource.query(`SELECT type FROM events WHERE data->>'public_id' = $1 ORDER BY seq`, [orderPublicId])) as Array<{ type: string }>;
  return rows.map((r) => r.type);
}

async function registryState(orderPublicId: string): Promise<string | undefined> {
  const [row] = (await getStack().dataSource.query('SELECT t.state FROM sandbox_registrar_transfers t JOIN orders o ON o.id = t.order_id WHERE o.public_id = $1', [orderPublicId])) as Array<{
    state: string;
  }>;
  return row?.state;
}

describe('refunds, decided by the fulfilment workflow (CONTRACT §6)', () => {
  ownTemporal();
  it('a transfer in flight is cancelled first: once the registrar confirms, 201, REFUNDED, the name back on sale, no sale booked; asking again answers the same refund with 200', async () => {
    const { client, partnerId } = await newPartner();
    const o = await buy(client, 'pay_stall_transfer_refund');
    await waitFor(() => orderState(client, o.public_id), (state) => state.status === 'TRANSFER_PENDING', TRANSFER_PENDING_MS, 'TRANSFER_PENDING');
    const res = await client.post<RefundBody>('/api/partner/v1/refunds', { order_id: o.public_id, reason: 'buyer changed their mind' });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.refund_id, /^ref_/);
    assert.equal(res.body.order_id, o.public_id);
    assert.equal(res.body.amount_cents, o.sale_price_cents);
    assert.equal(res.body.currency, 'USD');
    assert.equal(res.body.status, 'succeeded');

    assert.deepEqual(await fulfilmentResult(o.public_id), { status: 'REFUNDED' });
    const after = await orderState(client, o.public_id);
    assert.equal(after.status, 'REFUNDED');
    assert.equal(after.timeline.at(-1)?.status, 'REFUNDED');
    assert.equal(await available(client, o.domain), true);
    assert.equal(await registryState(o.public_id), 'cancelled');
    assert.equal(await count('SELECT 1 FROM transactions WHERE partner_id = $1', [partnerId]), 0);
    assert.deepEqual(await eventTypes(o.public_id), ['order.created', 'transfer.domain_locked', 'transfer.initiated', 'transfer.pending', 'order.refunded']);

    const again = await client.post<RefundBody>('/api/partner/v1/refunds', { order_id: o.public_id });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, res.body);
    assert.equal(await count('SELECT 1 FROM refunds WHERE partner_id = $1', [partnerId]), 1);
    await recordHistory(`order:${o.public_id}`, 'order-refunded-in-flight');
  });

  it('the registry completing the transfer before the cancellation lands: 422 refund_not_allowed, and order, refund rows, name, sale and events all say completed', async () => {
    const { client, partnerId } = await newPartner();
    // Sandbox input complete_on_cancel: the registry holds the transfer and completes it exactly as the cancellation arrives.
    const o = await buy(client, 'pay_complete_on_cancel_1');
    await waitFor(() => orderState(client, o.public_id), (state) => state.status === 'TRANSFER_PENDING', TRANSFER_PENDING_MS, 'TRANSFER_PENDING');
    const res = await client.post<{ error: { code: string; message: string } }>('/api/partner/v1/refunds', { order_id: o.public_id });
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.error.code, 'refund_not_allowed');
    assert.match(res.body.error.message, /completed the transfer/);

    assert.deepEqual(await fulfilmentResult(o.public_id), { status: 'TRANSFER_COMPLETED' });
    assert.equal((await orderState(client, o.public_id)).status, 'TRANSFER_COMPLETED');
    assert.equal(await registryState(o.public_id), 'completed');
    assert.equal(await count('SELECT 1 FROM refunds WHERE partner_id = $1', [partnerId]), 0);
    assert.equal(await available(client, o.domain), false);
    assert.equal(await count('SELECT 1 FROM transactions WHERE partner_id = $1', [partnerId]), 1);
    assert.equal(await count('SELECT 1 FROM ledger_entries WHERE partner_id = $1', [partnerId]), 3);
    assert.deepEqual(await eventTypes(o.public_id), ['order.created', 'transfer.domain_locked', 'transfer.initiated', 'transfer.pending', 'transfer.completed']);
    // Asking again is refused the same way, by the order's status.
    assert.equal((await client.post('/api/partner/v1/refunds', { order_id: o.public_id })).status, 422);
    await recordHistory(`order:${o.public_id}`, 'order-refund-refused');
  });

  it('a refund that reaches the workflow before the registrar was asked anything is granted without a registrar call', async () => {
    const s = getStack();
    const taskQueue = `refund-early-${randomUUID()}`;
    const baseUrl = await listen(createApp({ ...s.appDeps, workflows: { client: s.env.client, taskQueue } }));
    const { client } = await newPartner({ baseUrl });
    // No worker yet on this queue: the order is recorded and its workflow waits to run.
    const o = await buy(client);
    const refund = client.post<RefundBody>('/api/partner/v1/refunds', { order_id: o.public_id });
    // A moment for the refund's Update to reach the server before a worker polls: nothing shows it
    // (an Update that no worker has taken leaves no trace in the workflow's history or description).
    const updateOnItsWayMs = 300;
    await new Promise((r) => setTimeout(r, updateOnItsWayMs));
    const worker = await Worker.create({
      connection: s.env.nativeConnection,
      taskQueue,
      workflowBundle: s.workflowBundle,
      activities: createActivities({ dataSource: s.dataSource, masterKey: s.masterKey }),
    });
    await worker.runUntil(async () => {
      const res = await refund;
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(await fulfilmentResult(o.public_id), { status: 'REFUNDED' });
    });
    assert.deepEqual((await orderState(client, o.public_id)).timeline.map((t) => t.status), ['PAYMENT_RECORDED', 'REFUNDED']);
    assert.equal(await registryState(o.public_id), undefined, 'the registrar was never asked to transfer');
    await recordHistory(`order:${o.public_id}`, 'order-refunded-before-transfer');
    assert.equal(await available(client, o.domain), true);
  });

  it('two refund requests racing for one order make one refund: one 201, the other the same refund', async () => {
    const { client, partnerId } = await newPartner();
    const o = await buy(client, 'pay_stall_transfer_double');
    await waitFor(() => orderState(client, o.public_id), (state) => state.status === 'TRANSFER_PENDING', TRANSFER_PENDING_MS, 'TRANSFER_PENDING');
    const [a, b] = await Promise.all([
      client.post<RefundBody>('/api/partner/v1/refunds', { order_id: o.public_id }),
      client.post<RefundBody>('/api/partner/v1/refunds', { order_id: o.public_id }),
    ]);
    assert.deepEqual([a.status, b.status].sort(), [200, 201]);
    assert.equal(a.body.refund_id, b.body.refund_id);
    assert.equal(await count('SELECT 1 FROM refunds WHERE partner_id = $1', [partnerId]), 1);
    assert.equal(await count(`SELECT 1 FROM events WHERE type = 'order.refunded' AND data->>'public_id' = $1`, [o.public_id]), 1);
  });

  it('a failed order is refunded without touching its name, which another partner has bought since', async () => {
    const first = await newPartner();
    const failed = await buy(first.client, 'pay_fail_transfer_then_refund');
    assert.equal((await fulfilmentResult(failed.public_id)).status, 'TRANSFER_FAILED');
    assert.equal(await available(first.client, failed.domain), true, 'the failure put the name back on sale');

    const second = await newPartner();
    const q = await quote(second.client, failed.domain);
    assert.equal(q.status, 201, q.text);
    const resale = await order(second.client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_stall_transfer_resale', sale_price_cents: q.body.price_cents });
    assert.equal(resale.status, 201, resale.text);

    const res = await first.client.post<RefundBody>('/api/partner/v1/refunds', { order_id: failed.public_id });
    assert.equal(res.status, 201, res.text);
    assert.equal((await orderState(first.client, failed.public_id)).status, 'REFUNDED');
    assert.equal(await available(first.client, failed.domain), false, "the second buyer's sale stands");
    const [holder] = (await getStack().dataSource.query('SELECT o.public_id FROM domains d JOIN orders o ON o.id = d.held_by_order_id WHERE d.name = $1 AND d.environment = $2', [
      failed.domain,
      'sandbox',
    ])) as Array<{ public_id: string }>;
    assert.equal(holder.public_id, resale.body.public_id);
    assert.notEqual((await orderState(second.client, resale.body.public_id)).status, 'REFUNDED');
    // The holder's own refund does put it back on sale.
    await waitFor(() => orderState(second.client, resale.body.public_id), (state) => state.status === 'TRANSFER_PENDING', TRANSFER_PENDING_MS, 'TRANSFER_PENDING');
    assert.equal((await second.client.post('/api/partner/v1/refunds', { order_id: resale.body.public_id })).status, 201);
    assert.equal(await available(first.client, failed.domain), true);
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
});
