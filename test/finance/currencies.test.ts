import assert from 'node:assert/strict';
import { Domain } from '../../src/db/entities/domain';
import { importInventory } from '../../src/discovery/inventory';
import { reconcile } from '../../src/finance/reconcile';
import { runPayouts } from '../../src/finance/payouts';
import { nextPeriodStart, periodStartOf } from '../../src/finance/periods';
import { completedSale, refundWindowPassed } from '../helpers/money';
import { freshDomain, fulfilmentStepwise, order, quote } from '../helpers/orders';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';

type Totals = { count: number; gmv_cents: number; commission_cents: number; currency: string };
type TxnList = { data: Array<{ order_id: string; gross_cents: number; commission_cents: number; currency: string }>; totals: Totals };
type SettlementList = { data: Array<{ period_start: string; gross_sold_cents: number; commission_retained_cents: number; amount_owed_to_service_cents: number; currency: string }>; next_cursor: string | null };
type PayoutList = { data: Array<{ amount_cents: number; currency: string; breakdown: { service_collected_cents: number; currency: string } }> };

/** A EUR listing sold beside USD ones: no figure adds the two (CONTRACT §8). */
describe('currencies never mix: a EUR sale beside USD ones (CONTRACT §8)', function () {
  ownTemporal();
  this.timeout(120_000);

  /** A sandbox name listed anew in `currency` at `cents`, quoted and ordered through the API, and completed. */
  async function sell(client: Awaited<ReturnType<typeof newPartner>>['client'], currency: string, cents: number): Promise<string> {
    const s = getStack();
    const { name } = await freshDomain();
    const row = await s.dataSource.getRepository(Domain).findOneByOrFail({ environment: 'sandbox', name });
    await importInventory(s.dataSource, 'sandbox', [{ name, category: row.category, buy_now_price_cents: cents, floor_price_cents: 1, currency, status: 'listed', active_site: false }]);
    const q = await quote(client, name);
    assert.equal(q.status, 201, q.text);
    assert.deepEqual([q.body.price_cents, q.body.currency], [cents, currency]);
    const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: `pay_${currency}`, sale_price_cents: cents });
    assert.equal(o.status, 201, o.text);
    // Stepwise: all three sales in the same month, as a partner's would be.
    assert.equal((await fulfilmentStepwise(o.body.public_id)).status, 'TRANSFER_COMPLETED');
    return o.body.public_id;
  }

  it('/transactions answers one currency (USD unless asked), /settlements one row per month and currency, payouts one per currency; reconcile is clean', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    // Three sales in one month, whatever the date: away from a month's last hour first.
    const now = await s.env.currentTimeMs();
    const monthEnd = Date.parse(`${nextPeriodStart(periodStartOf(new Date(now)))}T00:00:00Z`);
    if (monthEnd - now < 3_600_000) await s.env.sleep(monthEnd - now + 60_000);
    const usd1 = await sell(client, 'USD', 100_000);
    const usd2 = await sell(client, 'USD', 50_000);
    const eur = await sell(client, 'EUR', 70_000);
    const commissionOf = (list: TxnList, gross: number) => list.data.find((t) => t.gross_cents === gross)!.commission_cents;

    const usd = (await client.get<TxnList>('/api/partner/v1/transactions')).body;
    assert.deepEqual(usd.data.map((t) => [t.order_id, t.currency]).sort(), [[usd1, 'USD'], [usd2, 'USD']].sort());
    assert.deepEqual([usd.totals.count, usd.totals.gmv_cents, usd.totals.currency], [2, 150_000, 'USD']);
    assert.equal(usd.totals.commission_cents, commissionOf(usd, 100_000) + commissionOf(usd, 50_000));
    const euro = (await client.get<TxnList>('/api/partner/v1/transactions?currency=EUR')).body;
    assert.deepEqual(euro.data.map((t) => [t.order_id, t.gross_cents, t.currency]), [[eur, 70_000, 'EUR']]);
    assert.deepEqual([euro.totals.count, euro.totals.gmv_cents, euro.totals.commission_cents, euro.totals.currency], [1, 70_000, euro.data[0].commission_cents, 'EUR']);
    const bad = await client.get('/api/partner/v1/transactions?currency=euro');
    assert.equal(bad.status, 400, bad.text);

    // One settlement per month and currency; each adds only its own currency's sales.
    const settlements = (await client.get<SettlementList>('/api/partner/v1/settlements')).body.data;
    const byCurrency = Object.fromEntries(settlements.map((p) => [p.currency, p]));
    assert.deepEqual(Object.keys(byCurrency).sort(), ['EUR', 'USD']);
    assert.equal(settlements[0].period_start, settlements[1].period_start, 'the same month, two rows');
    assert.deepEqual([byCurrency.USD.gross_sold_cents, byCurrency.USD.commission_retained_cents], [150_000, usd.totals.commission_cents]);
    assert.deepEqual([byCurrency.EUR.gross_sold_cents, byCurrency.EUR.commission_retained_cents], [70_000, euro.totals.commission_cents]);
    // Pages of one row: the cursor walks both currencies of the month.
    const first = (await client.get<SettlementList>('/api/partner/v1/settlements?limit=1')).body;
    const second = (await client.get<SettlementList>(`/api/partner/v1/settlements?limit=1&cursor=${first.next_cursor}`)).body;
    assert.deepEqual([first.data[0].currency, second.data[0].currency], ['EUR', 'USD']);
    assert.deepEqual((await client.get<SettlementList>('/api/partner/v1/settlements?currency=EUR')).body.data.map((p) => p.currency), ['EUR']);

    // Service-collected commissions in both currencies: one payout per currency, each its own sum.
    const at = new Date(await s.env.currentTimeMs()).toISOString();
    for (const [priceCents, currency] of [[10_000, 'USD'], [20_000, 'EUR']] as const) {
      await refundWindowPassed(await completedSale(partnerId, at, { paymentModel: 'service_collected', priceCents, commissionBps: 1000, currency }));
    }
    const made = (await runPayouts(s.dataSource, 'sandbox', new Date())).filter((p) => p.breakdown.service_collected_cents > 0);
    const mine = (await client.get<PayoutList>('/api/partner/v1/payouts')).body.data;
    assert.deepEqual(mine.map((p) => [p.currency, p.amount_cents, p.breakdown.currency]).sort(), [['EUR', 2_000, 'EUR'], ['USD', 1_000, 'USD']]);
    assert.ok(made.length >= 2);

    const report = await reconcile(s.dataSource, 'sandbox');
    assert.deepEqual(report.differences, []);
  });
});
