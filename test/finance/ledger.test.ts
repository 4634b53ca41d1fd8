import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { LedgerEntry } from '../../src/db/entities/ledger-entry';
import { LedgerPosting } from '../../src/db/entities/ledger-posting';
import { Partner } from '../../src/db/entities/partner';
import { SaleTransaction } from '../../src/db/entities/sale-transaction';
import { Settlement } from '../../src/db/entities/settlement';
import { bookSale, reverseSale } from '../../src/finance/sales';
import { closeSettlements } from '../../src/finance/settlements';
import { reconcile } from '../../src/finance/reconcile';
import { advanceOrder } from '../../src/orders/fulfilment';
import { Order } from '../../src/db/entities/order';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { completedSale, pendingOrder, refundWindowPassed } from '../helpers/money';
import { admin } from '../helpers/admin';



type TxnList = {
  data: Array<{ transaction_id: string; order_id: string; payment_model: string; status: string; gross_cents: number; commission_cents: number; occurred_at: string; reversed_at: string | null }>;
  next_cursor: string | null;
  totals: { count: number; gmv_cents: number; commission_cents: number; currency: string };
};
type SettlementList = { data: Array<{ settlement_id: string; period_start: string; period_end: string; status: string; gross_sold_cents: number; commission_retained_cents: number; amount_owed_to_service_cents: number }> };

describe('the ledger: double entry, booked once, reconciled (CONTRACT §8)', function () {
  ownTemporal();
  // Its own timeout, so the file also runs alone under libfaketime (mocha --no-config).
  this.timeout(60_000);
  it('every posting balances to zero and carries its business key; a sale books gross, what the partner owes and its commission', async () => {
    const { partnerId } = await newPartner();
    const order = await completedSale(partnerId, '2026-05-10T12:00:00Z', { priceCents: 123_457, commissionBps: 1500 });
    const posting = await getStack().dataSource.getRepository(LedgerPosting).findOneByOrFail({ idempotencyKey: `order:${order.id}:completed` });
    assert.equal(posting.periodStart, '2026-05-01');
    const entries = await getStack().dataSource.getRepository(LedgerEntry).findBy({ postingId: posting.id });
    const by = Object.fromEntries(entries.map((e) => [e.account, e.amountCents]));
    assert.deepEqual(by, { sales: -123_457, partner_owes_service: 123_457 - 18_518, partner_commission_retained: 18_518 });
    assert.equal(entries.reduce((s, e) => s + e.amountCents, 0), 0);
  });

  it('a retried booking and two racing completions book the sale once', async () => {
    const s = getStack();
    const { partnerId } = await newPartner();
    const order = await pendingOrder(partnerId);
    const at = '2026-05-11T08:00:00Z';
    await Promise.all([0, 1, 2, 3].map(() => advanceOrder(s.dataSource, { orderId: order.id, to: 'TRANSFER_COMPLETED', at })));
    const completed = await s.dataSource.getRepository(Order).findOneByOrFail({ id: order.id });
    await s.dataSource.transaction((tx) => bookSale(tx, completed, new Date(at))); // the activity retried after its commit
    assert.equal(await s.dataSource.getRepository(SaleTransaction).countBy({ partnerId }), 1);
    assert.equal(await s.dataSource.getRepository(LedgerPosting).countBy({ partnerId }), 1);
    assert.equal(await s.dataSource.getRepository(LedgerEntry).countBy({ partnerId }), 3);
  });

  it('a posting that does not balance is refused by the database at commit', async () => {
    const s = getStack();
    const { partnerId } = await newPartner();
    await assert.rejects(
      s.dataSource.transaction(async (tx) => {
        const p = await tx.getRepository(LedgerPosting).save(
          tx.getRepository(LedgerPosting).create({ idempotencyKey: `test:${partnerId}:unbalanced`, partnerId, environment: 'sandbox', kind: 'sale', paymentModel: 'partner_collected', transactionId: null, periodStart: '2026-05-01', occurredAt: new Date() }),
        );
        await tx.getRepository(LedgerEntry).insert({ postingId: p.id, partnerId, environment: 'sandbox', transactionId: null, account: 'sales', amountCents: -5, currency: 'USD' });
      }),
      /does not balance/,
    );
    assert.equal(await s.dataSource.getRepository(LedgerPosting).countBy({ partnerId }), 0);
  });

  it('a rate change applies from then on: past entries keep the rate fixed on their sale', async () => {
    const s = getStack();
    const { partnerId, client } = await newPartner();
    const before = await completedSale(partnerId, '2026-05-12T08:00:00Z', { priceCents: 10_000, commissionBps: 1500 });
    const entriesBefore = await s.dataSource.getRepository(LedgerEntry).find({ where: { partnerId }, order: { id: 'ASC' } });
    await s.dataSource.getRepository(Partner).update({ id: partnerId }, { commissionPartnerCollectedBps: 500 });
    assert.deepEqual(await s.dataSource.getRepository(LedgerEntry).find({ where: { partnerId }, order: { id: 'ASC' } }), entriesBefore);
    const list = (await client.get<TxnList>('/api/partner/v1/transactions')).body;
    assert.equal(list.data.find((t) => t.order_id === before.publicId)?.commission_cents, 1500);
  });

  it('/transactions: newest first across pages, filters by payment model, status and dates, totals over the whole filtered set', async () => {
    const s = getStack();
    const { partnerId, client } = await newPartner();
    const sales: Order[] = [];
    for (let i = 0; i < 25; i++) {
      const day = String(1 + (i % 28)).padStart(2, '0');
      sales.push(await completedSale(partnerId, `2026-06-${day}T10:00:00Z`, { priceCents: 1000 + i, paymentModel: i % 5 === 0 ? 'service_collected' : 'partner_collected', commissionBps: 1000 }));
    }
    const reversed = await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: sales[3].id });
    await s.dataSource.transaction((tx) => reverseSale(tx, reversed.id, new Date('2026-06-20T00:00:00Z')));

    const seen: TxnList['data'] = [];
    let cursor: string | null = null;
    let totals: TxnList['totals'] | undefined;
    do {
      const page: { status: number; text: string; body: TxnList } = await client.get(`/api/partner/v1/transactions?limit=10${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200, page.text);
      seen.push(...page.body.data);
      totals ??= page.body.totals;
      assert.deepEqual(page.body.totals, totals, 'totals are the same on every page');
      cursor = page.body.next_cursor;
    } while (cursor);
    assert.equal(seen.length, 25);
    assert.deepEqual(seen.map((t) => t.occurred_at), [...seen.map((t) => t.occurred_at)].sort().reverse());
    const completedGross = sales.filter((o) => o.id !== sales[3].id).reduce((sum, o) => sum + o.salePriceCents, 0);
    assert.deepEqual(totals, { count: 25, gmv_cents: completedGross, commission_cents: sales.filter((o) => o.id !== sales[3].id).reduce((sum, o) => sum + Math.floor(o.salePriceCents / 10), 0), currency: 'USD' });
    assert.equal(seen.find((t) => t.order_id === sales[3].publicId)?.status, 'reversed');
    assert.equal(seen.find((t) => t.order_id === sales[3].publicId)?.reversed_at, '2026-06-20T00:00:00.000Z', 'when it was undone');
    assert.ok(seen.filter((t) => t.status === 'completed').every((t) => t.reversed_at === null));

    const service = (await client.get<TxnList>('/api/partner/v1/transactions?payment_model=service_collected&limit=2')).body;
    assert.equal(service.totals.count, 5);
    assert.equal(service.data.length, 2);
    assert.ok(service.data.every((t) => t.payment_model === 'service_collected'));
    const rev = (await client.get<TxnList>('/api/partner/v1/transactions?status=reversed')).body;
    assert.deepEqual([rev.totals.count, rev.totals.gmv_cents], [1, 0]);
    const oneDay = (await client.get<TxnList>('/api/partner/v1/transactions?from=2026-06-02&to=2026-06-02')).body;
    assert.equal(oneDay.totals.count, 1);
    const instant = (await client.get<TxnList>('/api/partner/v1/transactions?from=2026-06-02T10:00:00Z&to=2026-06-02T10:00:00Z')).body;
    assert.equal(instant.totals.count, 1, 'both bounds are inclusive');
    assert.equal((await client.get('/api/partner/v1/transactions?status=refunded')).status, 400);
    assert.equal((await client.get('/api/partner/v1/transactions?cursor=bogus')).status, 400);
  });

  it('a month closes into a settlement equal to the sums of its sales; a past month is never listed open; a closed settlement never changes and a reversal or a late sale after the close lands in the next open month, which the transaction names', async () => {
    const s = getStack();
    const { partnerId, client } = await newPartner();
    const july = [
      await completedSale(partnerId, '2026-07-01T00:00:00Z', { priceCents: 50_000 }),
      await completedSale(partnerId, '2026-07-15T09:30:00Z', { priceCents: 20_001 }),
      await completedSale(partnerId, '2026-07-31T23:59:59.999Z', { priceCents: 30_000 }),
    ];
    await completedSale(partnerId, '2026-08-01T00:00:00Z', { priceCents: 7_000 });
    assert.equal(await s.dataSource.getRepository(Settlement).countBy({ partnerId, status: 'open' }), 2, 'booked into two open months');

    // Both months have ended (the dates are past): reading them closes them, as the month end would.
    const [aug, jul] = (await client.get<SettlementList>('/api/partner/v1/settlements')).body.data;
    assert.deepEqual([aug, jul].map((x) => [x.period_start, x.period_end, x.status]), [
      ['2026-08-01', '2026-08-31', 'closed'],
      ['2026-07-01', '2026-07-31', 'closed'],
    ]);
    const gross = july.reduce((sum, o) => sum + o.salePriceCents, 0);
    const commission = july.reduce((sum, o) => sum + Math.floor((o.salePriceCents * 1500) / 10_000), 0);
    assert.deepEqual(
      { gross: jul.gross_sold_cents, commission: jul.commission_retained_cents, owed: jul.amount_owed_to_service_cents },
      { gross, commission, owed: gross - commission },
    );
    const txns = (await client.get<TxnList>('/api/partner/v1/transactions?from=2026-07-01&to=2026-07-31')).body.totals;
    assert.deepEqual([txns.gmv_cents, txns.commission_cents], [gross, commission], 'the settlement equals the sum of its transactions');
    assert.equal(aug.gross_sold_cents, 7_000);

    // A chargeback of a July sale booked after July (and August) closed: both untouched, the next open month takes it.
    const txn = await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: july[1].id });
    await s.dataSource.transaction((tx) => reverseSale(tx, txn.id, new Date('2026-07-20T00:00:00Z')));
    await s.dataSource.transaction((tx) => reverseSale(tx, txn.id, new Date('2026-07-20T00:00:00Z'))); // once only
    assert.equal((await s.dataSource.getRepository(LedgerPosting).findOneByOrFail({ transactionId: txn.id, kind: 'reversal' })).periodStart, '2026-09-01');
    const [sep, aug2, jul2] = (await client.get<SettlementList>('/api/partner/v1/settlements')).body.data;
    assert.deepEqual([jul2, aug2], [jul, aug]);
    assert.deepEqual([sep.period_start, sep.status, sep.gross_sold_cents], ['2026-09-01', 'closed', -20_001]);
    assert.equal(sep.amount_owed_to_service_cents, sep.gross_sold_cents - sep.commission_retained_cents);
    assert.equal(await s.dataSource.getRepository(LedgerPosting).countBy({ partnerId, kind: 'reversal' }), 1);
    // A late completion dated in July is booked into the next open month, and its transaction says which.
    const late = await completedSale(partnerId, '2026-07-31T12:00:00Z', { priceCents: 1_000 });
    assert.equal((await s.dataSource.getRepository(LedgerPosting).findOneByOrFail({ idempotencyKey: `order:${late.id}:completed` })).periodStart, '2026-10-01');
    const listed = (await client.get<{ data: Array<{ order_id: string; occurred_at: string; settlement_period: string }> }>('/api/partner/v1/transactions?from=2026-07-31&to=2026-07-31')).body.data;
    assert.deepEqual(listed.find((t) => t.order_id === late.publicId), { ...listed.find((t) => t.order_id === late.publicId), occurred_at: '2026-07-31T12:00:00.000Z', settlement_period: '2026-10-01' });
    assert.equal(listed.find((t) => t.order_id === july[2].publicId)?.settlement_period, '2026-07-01');
    assert.deepEqual((await client.get<SettlementList>('/api/partner/v1/settlements')).body.data.slice(-2), [aug, jul]);
  });

  it('payouts run pays what is owed on service-collected sales once, as the sum of its lines; GET /payouts shows it', async () => {
    const s = getStack();
    const { partnerId, client } = await newPartner();
    const a = await completedSale(partnerId, '2026-09-03T10:00:00Z', { paymentModel: 'service_collected', priceCents: 80_000, commissionBps: 1000 });
    const b = await completedSale(partnerId, '2026-09-04T10:00:00Z', { paymentModel: 'service_collected', priceCents: 12_345, commissionBps: 1000 });
    await completedSale(partnerId, '2026-09-05T10:00:00Z', { paymentModel: 'partner_collected', priceCents: 5_000 });
    // Not payable while their 30-day refund windows run: a payout run pays none of it.
    const early = await admin('payouts', 'run', '--env', 'sandbox', '--json');
    assert.equal(early.code, 0, early.stderr);
    assert.equal((await client.get<{ data: unknown[] }>('/api/partner/v1/payouts')).body.data.length, 0, 'nothing paid inside the window');
    // Their windows end 30 days on, in October: the commissions become payable then.
    await refundWindowPassed(a, new Date('2026-10-03T10:00:00Z'));
    await refundWindowPassed(b, new Date('2026-10-04T10:00:00Z'));

    const first = await admin('payouts', 'run', '--env', 'sandbox', '--json');
    assert.equal(first.code, 0, first.stderr);
    const made = (JSON.parse(first.stdout) as Array<{ payout_id: string; amount_cents: number; breakdown: { service_collected_cents: number } }>).filter((p) => p.amount_cents === 8000 + 1234);
    assert.equal(made.length, 1);
    assert.equal(made[0].breakdown.service_collected_cents, 9234);
    const second = await admin('payouts', 'run', '--env', 'sandbox', '--json');
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(JSON.parse(second.stdout), [], 'nothing is paid twice');

    const listed = (await client.get<{ data: Array<{ payout_id: string; amount_cents: number; status: string; period_start: string; period_end: string }> }>('/api/partner/v1/payouts')).body.data;
    assert.deepEqual(listed.map((p) => [p.payout_id, p.amount_cents, p.status, p.period_start, p.period_end]), [[made[0].payout_id, 9234, 'paid', '2026-10-01', '2026-10-31']]);
    assert.ok((await reconcile(s.dataSource)).ok);

    // The 80,000 sale is charged back after its commission was paid: the next payout nets the
    // clawback, and its breakdown says how much of it was taken back. A sale refunded inside its
    // window was never payable: no payout sees it.
    const refunded = await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ partnerId, grossCents: 80_000 });
    await s.dataSource.transaction((tx) => reverseSale(tx, refunded.id, new Date('2026-09-20T00:00:00Z')));
    await refundWindowPassed(await completedSale(partnerId, '2026-09-21T10:00:00Z', { paymentModel: 'service_collected', priceCents: 100_000, commissionBps: 1000 }), new Date('2026-10-21T10:00:00Z'));
    const undoneUnpaid = await completedSale(partnerId, '2026-09-22T10:00:00Z', { paymentModel: 'service_collected', priceCents: 30_000, commissionBps: 1000 });
    const undoneTxn = await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: undoneUnpaid.id });
    await s.dataSource.transaction((tx) => reverseSale(tx, undoneTxn.id, new Date('2026-09-23T00:00:00Z')));
    const third = await admin('payouts', 'run', '--env', 'sandbox', '--json');
    assert.equal(third.code, 0, third.stderr);
    const mine = (await client.get<{ data: Array<{ amount_cents: number; breakdown: { service_collected_cents: number; reversed_cents: number } }> }>('/api/partner/v1/payouts')).body.data;
    assert.equal(mine.length, 2);
    assert.deepEqual([mine[0].amount_cents, mine[0].breakdown.service_collected_cents, mine[0].breakdown.reversed_cents], [2_000, 2_000, -8_000], 'the newest nets the clawback');
    assert.equal(mine[1].breakdown.reversed_cents, 0);
    assert.ok((await reconcile(s.dataSource)).ok);
  });

  it('reconcile recomputes everything from the ledger and exits non-zero listing each corrupted figure', async () => {
    const s = getStack();
    const { partnerId } = await newPartner();
    const order = await completedSale(partnerId, '2026-03-10T10:00:00Z', { priceCents: 40_000 });
    await closeSettlements(s.dataSource, '2026-04-01');
    const clean = await admin('reconcile', '--json');
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    assert.equal((JSON.parse(clean.stdout) as { ok: boolean }).ok, true);

    const settlement = await s.dataSource.getRepository(Settlement).findOneByOrFail({ partnerId, periodStart: '2026-03-01' });
    const txn = await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: order.id });
    await s.dataSource.getRepository(Settlement).update({ id: settlement.id }, { grossSoldCents: 40_001 });
    await s.dataSource.getRepository(SaleTransaction).update({ id: txn.id }, { commissionCents: 1 });
    try {
      const dirty = await admin('reconcile', '--env', 'sandbox', '--json');
      assert.equal(dirty.code, 1, dirty.stdout.slice(0, 600) + dirty.stderr);
      const report = JSON.parse(dirty.stdout) as { ok: boolean; differences: Array<{ kind: string; id: string; field: string; stored: number; from_ledger: number }> };
      assert.equal(report.ok, false);
      assert.ok(report.differences.some((d) => d.kind === 'settlement' && d.id === settlement.publicId && d.field === 'gross_sold_cents' && d.stored === 40_001 && d.from_ledger === 40_000));
      assert.ok(report.differences.some((d) => d.kind === 'transaction' && d.id === txn.publicId && d.field === 'commission_cents' && d.from_ledger === 6000));
    } finally {
      await s.dataSource.getRepository(Settlement).update({ id: settlement.id }, { grossSoldCents: 40_000 });
      await s.dataSource.getRepository(SaleTransaction).update({ id: txn.id }, { commissionCents: 6000 });
    }
    assert.ok((await reconcile(s.dataSource)).ok);
  });
});
