import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { LedgerPosting } from '../../src/db/entities/ledger-posting';
import { Order } from '../../src/db/entities/order';
import { SaleTransaction } from '../../src/db/entities/sale-transaction';
import { reconcile } from '../../src/finance/reconcile';
import { refundWindowPassed, completedSale } from '../helpers/money';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { admin } from '../helpers/admin';
import { randomUUID } from 'node:crypto';
import { Domain } from '../../src/db/entities/domain';
import { importInventory } from '../../src/discovery/inventory';
import { startOrderFulfilment } from '../../src/orders/start-workflows';
import { refundOrder } from '../../src/orders/refund-requests';
import type { ApiError } from '../../src/api/errors';
import { fulfilmentStateQuery, orderWorkflowId } from '../../workflows/messages';
import { waitFor } from '../helpers/wait';



describe('admin order refund: the service refunds a service-collected sale (CONTRACT §11, §12)', () => {
  ownTemporal();
  it('after completion, within 30 days: the refund is recorded, the sale reversed in the ledger once, the order REFUNDED, order.refunded emitted; asking again answers the same refund', async () => {
    const s = getStack();
    const { partnerId, client } = await newPartner();
    const order = await completedSale(partnerId, new Date().toISOString(), { paymentModel: 'service_collected', priceCents: 30_000, commissionBps: 1000 });
    const res = await admin('order', 'refund', order.publicId, '--reason', 'buyer disputed', '--json');
    assert.equal(res.code, 0, res.stderr);
    const refund = JSON.parse(res.stdout) as { refund_id: string; order_id: string; status: string; amount_cents: number; reason: string };
    assert.deepEqual([refund.order_id, refund.status, refund.amount_cents, refund.reason], [order.publicId, 'succeeded', 30_000, 'buyer disputed']);

    assert.equal((await s.dataSource.getRepository(Order).findOneByOrFail({ id: order.id })).status, 'REFUNDED');
    const txn = await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: order.id });
    assert.equal(txn.status, 'reversed');
    assert.equal(await s.dataSource.getRepository(LedgerPosting).countBy({ transactionId: txn.id, kind: 'reversal' }), 1);
    const totals = (await client.get<{ totals: { count: number; commission_cents: number } }>('/api/partner/v1/transactions')).body.totals;
    assert.deepEqual([totals.count, totals.commission_cents], [1, 0]);
    const events = (await client.get<{ data: Array<{ type: string; data: { public_id?: string } }> }>('/api/partner/v1/events?limit=100')).body.data.filter((e) => e.data.public_id === order.publicId);
    // (the fixture order was written straight into the read model, so it has no order.created)
    assert.deepEqual(events.map((e) => e.type), ['transfer.completed', 'order.refunded']);

    const again = await admin('order', 'refund', order.publicId, '--json');
    assert.equal(again.code, 0, again.stderr);
    assert.equal((JSON.parse(again.stdout) as { refund_id: string }).refund_id, refund.refund_id);
    assert.equal(await s.dataSource.getRepository(LedgerPosting).countBy({ transactionId: txn.id, kind: 'reversal' }), 1);
    assert.ok((await reconcile(s.dataSource)).ok);
  });

  it('before completion too: a live hosted-checkout sale still waiting for an operator 31 days after payment is refused by its workflow, on its clock', async () => {
    const s = getStack();
    const { partnerId } = await newPartner({ environment: 'live' });
    const name = `window-${randomUUID().slice(0, 8)}.com`;
    await importInventory(s.dataSource, 'live', [{ name, category: 'business', buy_now_price_cents: 10_000, floor_price_cents: 1, currency: 'USD', status: 'listed', active_site: false }]);
    const domain = await s.dataSource.getRepository(Domain).findOneByOrFail({ environment: 'live', name });
    const orders = s.dataSource.getRepository(Order);
    const order = await orders.save(
      orders.create({ publicId: `ord_window${randomUUID().replace(/-/g, '').slice(0, 16)}`, partnerId, environment: 'live', quoteId: null, domainId: domain.id, domain: name, salePriceCents: 10_000, currency: 'USD', externalPaymentRef: 'pay_live', paymentModel: 'service_collected', commissionBps: 1000, status: 'PAYMENT_RECORDED', failureReason: null, workflowStarted: true }),
    );
    // Sold to this order, as recording a sale does: off the market (other files' live searches never meet it).
    await s.dataSource.getRepository(Domain).update({ id: domain.id }, { status: 'sold', heldByOrderId: order.id });
    const workflows = { client: s.env.client, taskQueue: s.taskQueue };
    await startOrderFulfilment(workflows, { orderId: order.id, orderPublicId: order.publicId, partnerId, environment: 'live', domain: name, serviceCollected: true });
    const handle = s.env.client.workflow.getHandle(orderWorkflowId(order.publicId));
    await waitFor(() => handle.query(fulfilmentStateQuery), (state) => state.awaitingOperator, 30_000, 'waiting for an operator');
    await s.env.sleep('31 days');
    await assert.rejects(refundOrder({ dataSource: s.dataSource, workflows }, (await orders.findOneByOrFail({ id: order.id })), 'too late', 'service'), (err: ApiError) => err.code === 'refund_not_allowed' && /refund window has closed/.test(err.message));
    assert.equal((await orders.findOneByOrFail({ id: order.id })).status, 'TRANSFER_PENDING');
    assert.equal((await handle.query(fulfilmentStateQuery)).refund, null, 'nothing recorded');
  });

  it('refuses a partner-collected order, a sale paid more than 30 days ago, and an unknown order, changing nothing', async () => {
    const s = getStack();
    const { partnerId } = await newPartner();
    const partnerCollected = await completedSale(partnerId, new Date().toISOString());
    const res = await admin('order', 'refund', partnerCollected.publicId, '--json');
    assert.equal(res.code, 1);
    assert.match(res.stderr, /partner-collected/);

    const old = await completedSale(partnerId, new Date().toISOString(), { paymentModel: 'service_collected' });
    // Its 30-day window ended (the checkout session workflow's timer made the commission payable).
    await refundWindowPassed(old);
    const late = await admin('order', 'refund', old.publicId, '--json');
    assert.equal(late.code, 1);
    assert.match(late.stderr, /refund window/);
    assert.equal((await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: old.id })).status, 'completed');

    const unknown = await admin('order', 'refund', 'ord_nope', '--json');
    assert.equal(unknown.code, 1);
  });
});
