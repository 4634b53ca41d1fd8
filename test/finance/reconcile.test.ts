import assert from 'node:assert/strict';
import type { EntitySubscriberInterface } from 'typeorm';
import { Order } from '../../src/db/entities/order';
import { ReferralLink, ReferralSale } from '../../src/db/entities/referral';
import { SaleTransaction } from '../../src/db/entities/sale-transaction';
import { reconcile, type Difference } from '../../src/finance/reconcile';
import { reverseSale } from '../../src/finance/sales';
import { recordReferredSale } from '../../src/referral/commissions';
import { completedSale, pendingOrder } from '../helpers/money';
import { affiliatePartner } from '../helpers/referral';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { Registry } from 'prom-client';
import { watchReconcile } from '../../src/metrics/reconcile';
import { waitFor } from '../helpers/wait';

/**
 * Reconcile finds what matters (issue: money, round three): each case is planted straight in the
 * database, named by reconcile, then put back, so the suite's last reconcile is clean.
 */
describe('reconcile names what drifted, from one snapshot', function () {
  ownTemporal();
  this.timeout(60_000);

  /** The differences reconcile reports about `ids` (other tests' rows are theirs). */
  async function about(...ids: string[]): Promise<Difference[]> {
    return (await reconcile(getStack().dataSource, 'sandbox')).differences.filter((d) => ids.some((id) => d.id.includes(id)));
  }

  /** Plants a change, checks what reconcile says about `ids`, puts it back, and checks it is clean again. */
  async function planted(ids: string[], plant: () => Promise<unknown>, undo: () => Promise<unknown>, check: (found: Difference[]) => void): Promise<void> {
    assert.deepEqual(await about(...ids), [], 'clean before');
    await plant();
    try {
      check(await about(...ids));
    } finally {
      await undo();
    }
    assert.deepEqual(await about(...ids), [], 'clean again');
  }

  const orders = () => getStack().dataSource.getRepository(Order);
  const transactions = () => getStack().dataSource.getRepository(SaleTransaction);
  const fields = (found: Difference[]) => found.map((d) => `${d.kind}:${d.field}`);

  it('a refunded order whose sale is not reversed', async () => {
    const { partnerId } = await newPartner();
    const order = await completedSale(partnerId, new Date().toISOString(), { paymentModel: 'service_collected' });
    await planted(
      [order.publicId],
      () => orders().update({ id: order.id }, { status: 'REFUNDED' }),
      () => orders().update({ id: order.id }, { status: 'TRANSFER_COMPLETED' }),
      (found) => assert.deepEqual(fields(found), ['order:refunded sale reversed']),
    );
  });

  it('--env: each environment’s report and gauge hold that environment’s differences only (one planted in live is not sandbox’s)', async () => {
    const { partnerId } = await newPartner();
    const order = await completedSale(partnerId, new Date().toISOString(), { paymentModel: 'service_collected', environment: 'live' });
    const inEnv = async (environment: 'sandbox' | 'live') => (await reconcile(getStack().dataSource, environment)).differences.filter((d) => d.id === order.publicId).map((d) => d.field);
    await orders().update({ id: order.id }, { status: 'REFUNDED' });
    try {
      assert.deepEqual(await inEnv('live'), ['refunded sale reversed']);
      assert.deepEqual(await inEnv('sandbox'), [], 'a live order is no difference of sandbox');
      const registry = new Registry();
      watchReconcile(getStack().dataSource, registry);
      await registry.metrics();
      const text = await waitFor(() => registry.metrics(), (scraped) => /reconcile_last_run_timestamp_seconds [1-9]/.test(scraped), 10_000, 'a finished reconcile pass in a scrape');
      const gauge = (environment: string) => Number(new RegExp(`partner_api_reconcile_differences\\{environment="${environment}"\\} (\\d+)`).exec(text)?.[1]);
      const sandboxNow = (await reconcile(getStack().dataSource, 'sandbox')).differences.length;
      assert.ok(gauge('live') >= 1, text);
      assert.equal(gauge('sandbox'), sandboxNow, 'the sandbox gauge counts sandbox’s differences only');
    } finally {
      await orders().update({ id: order.id }, { status: 'TRANSFER_COMPLETED' });
    }
    assert.deepEqual(await inEnv('live'), []);
  });

  it('the worker’s gauge serves the count (the LedgerDoesNotReconcile alert reads it), computed in the background, not in the scrape', async () => {
    const { partnerId } = await newPartner();
    const order = await completedSale(partnerId, new Date().toISOString(), { paymentModel: 'service_collected' });
    const registry = new Registry();
    watchReconcile(getStack().dataSource, registry);
    await orders().update({ id: order.id }, { status: 'REFUNDED' });
    try {
      const first = await registry.metrics();
      assert.doesNotMatch(first, /partner_api_reconcile_differences\{/, 'the first scrape only starts a pass');
      const text = await waitFor(() => registry.metrics(), (scraped) => /reconcile_last_run_timestamp_seconds [1-9]/.test(scraped), 10_000, 'a finished reconcile pass in a scrape');
      const count = Number(/partner_api_reconcile_differences\{environment="sandbox"\} (\d+)/.exec(text)?.[1]);
      assert.ok(count >= 1, text);
    } finally {
      await orders().update({ id: order.id }, { status: 'TRANSFER_COMPLETED' });
    }
  });

  it('a transaction whose gross is not its order\'s price, or whose commission is not floor(gross × the order\'s bps); and the month\'s settlement that no longer agrees with /transactions', async () => {
    const { partnerId } = await newPartner();
    const order = await completedSale(partnerId, new Date().toISOString(), { priceCents: 100_001, commissionBps: 1234 });
    const txn = await transactions().findOneByOrFail({ orderId: order.id });
    await planted(
      [txn.publicId],
      () => orders().update({ id: order.id }, { salePriceCents: 100_002 }),
      () => orders().update({ id: order.id }, { salePriceCents: 100_001 }),
      (found) => assert.deepEqual(found.map((d) => [d.field, d.stored, d.from_ledger]), [["gross_cents (the order's sale_price_cents)", 100_001, 100_002]]),
    );
    await planted(
      [txn.publicId],
      () => orders().update({ id: order.id }, { commissionBps: 1000 }),
      () => orders().update({ id: order.id }, { commissionBps: 1234 }),
      (found) => assert.deepEqual(found.map((d) => [d.field, d.stored, d.from_ledger]), [['commission_cents (floor(gross × 1000 bps))', 12_340, 10_000]]),
    );
    // The stored row edited: the ledger disagrees, the order disagrees, and so does the month's
    // settlement with what /transactions lists for it.
    const settlementOf = (found: Difference[]) => found.filter((d) => d.kind === 'settlement');
    const [settlement] = (await getStack().dataSource.query('SELECT public_id FROM settlements WHERE partner_id = $1', [partnerId])) as Array<{ public_id: string }>;
    await planted(
      [txn.publicId, settlement.public_id],
      () => transactions().update({ id: txn.id }, { grossCents: 100_101 }),
      () => transactions().update({ id: txn.id }, { grossCents: 100_001 }),
      (found) => {
        assert.ok(fields(found).includes('transaction:gross_cents'), JSON.stringify(found));
        assert.deepEqual(
          settlementOf(found).map((d) => [d.id, d.field, d.stored, d.from_ledger]),
          [
            [settlement.public_id, "gross_sold_cents (its month's /transactions)", 100_001, 100_101],
            [settlement.public_id, "amount_owed_to_service_cents (its month's /transactions)", 100_001 - 12_340, 100_101 - 12_340],
          ],
        );
      },
    );
  });

  it('a referred sale of a failed or refunded order not reversed, and one past its 30-day window neither accrued nor reversed (its workflow lost)', async () => {
    const s = getStack();
    const { partnerId, client } = await affiliatePartner();
    const link = (await client.post<{ link_id: string }>('/api/partner/v1/links', { kind: 'generic' })).body;
    const { code } = await s.dataSource.getRepository(ReferralLink).findOneByOrFail({ publicId: link.link_id });
    const refer = async (orderId: string, at: Date) =>
      (await s.dataSource.transaction((tx) => recordReferredSale(tx, { linkCode: code, environment: 'sandbox', sellerPartnerId: 'the house', orderId, buyerEmail: 'b@example.com', domain: 'x.com', amountCents: 10_000, currency: 'USD', at })))!;

    const pending = await pendingOrder(partnerId, { paymentModel: 'service_collected' });
    const failedSale = await refer(pending.id, new Date());
    await planted(
      [failedSale.publicId],
      () => orders().update({ id: pending.id }, { status: 'TRANSFER_FAILED' }),
      () => orders().update({ id: pending.id }, { status: 'TRANSFER_PENDING' }),
      (found) => assert.deepEqual(fields(found), ['referral_sale:commission reversed (order TRANSFER_FAILED)']),
    );

    const sold = await completedSale(partnerId, new Date().toISOString(), { paymentModel: 'service_collected' });
    const lost = await refer(sold.id, new Date());
    await planted(
      [lost.publicId],
      () => s.dataSource.getRepository(ReferralSale).update({ id: lost.id }, { occurredAt: new Date(Date.now() - 40 * 86_400_000) }),
      () => s.dataSource.getRepository(ReferralSale).update({ id: lost.id }, { occurredAt: new Date() }),
      (found) => assert.deepEqual(fields(found), ['referral_sale:commission after its 30-day window']),
    );
  });

  it('a zero-price sale is no difference', async () => {
    const { partnerId } = await newPartner();
    const order = await completedSale(partnerId, new Date().toISOString(), { priceCents: 0 });
    const txn = await transactions().findOneByOrFail({ orderId: order.id });
    assert.deepEqual(await about(order.publicId, txn.publicId), []);
  });

  it('reads one snapshot: a reversal committed while it runs is no difference', async () => {
    const s = getStack();
    const { partnerId } = await newPartner();
    const order = await completedSale(partnerId, new Date().toISOString(), { paymentModel: 'service_collected' });
    const txn = await transactions().findOneByOrFail({ orderId: order.id });
    // Right after reconcile has read the transactions (still `completed`), the sale is reversed
    // and committed on another connection, before reconcile reads the postings.
    let reversed = false;
    const reverseMeanwhile: EntitySubscriberInterface<SaleTransaction> = {
      listenTo: () => SaleTransaction,
      afterLoad: async (entity) => {
        if (reversed || entity.id !== txn.id) return;
        reversed = true;
        await s.dataSource.transaction((tx) => reverseSale(tx, txn.id, new Date()));
      },
    };
    s.dataSource.subscribers.push(reverseMeanwhile);
    try {
      assert.deepEqual(await about(txn.publicId, order.publicId), []);
    } finally {
      s.dataSource.subscribers.splice(s.dataSource.subscribers.indexOf(reverseMeanwhile), 1);
    }
    assert.ok(reversed, 'the reversal ran during reconcile');
    assert.equal((await transactions().findOneByOrFail({ id: txn.id })).status, 'reversed');
    assert.deepEqual(await about(txn.publicId, order.publicId), []);
  });
});
