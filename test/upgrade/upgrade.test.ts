import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { In, type DataSource } from 'typeorm';
import { CheckoutPayment } from '../../src/db/entities/checkout-session';
import { LedgerPosting } from '../../src/db/entities/ledger-posting';
import { Order } from '../../src/db/entities/order';
import { SandboxCharge } from '../../src/db/entities/sandbox-charge';
import { SaleTransaction } from '../../src/db/entities/sale-transaction';
import { createDataSource, migrations, openDatabase } from '../../src/db/data-source';
import { reconcile } from '../../src/finance/reconcile';
import { refundOrder } from '../../src/orders/refund-requests';
import { startOrderFulfilment } from '../../src/orders/start-workflows';
import { workflowStarters } from '../../src/temporal/starters';
import type { WorkflowStarter } from '../../src/temporal/start';
import { FINAL_ORDER_STATUSES } from '../../workflows/messages';
import { fulfilmentStepwise } from '../helpers/orders';
import { sweepCardMoney } from '../helpers/activities';
import { emptyDatabase, getStack, ownTemporal, suiteWorker } from '../helpers/stack';

/** A dump of an earlier release's data (test/upgrade/README.md says how it was recorded). */
interface ReleaseDump {
  release: string;
  recorded_at: string;
  migrations: string[];
  tables: Record<string, unknown[]>;
}

/**
 * An upgrade keeps every cent (issue: money, round four): the data an earlier release wrote,
 * loaded into a database with that release's schema, migrated by this one, then run by this
 * release's worker and sweep until every order has ended, reconciles clean.
 */
describe('an upgrade from the release before the card processor’s record (f373b5c): every order completes and every cent reconciles', function () {
  ownTemporal();
  this.timeout(180_000);
  const dump = JSON.parse(readFileSync(path.join(__dirname, '..', '..', '..', 'test', 'upgrade', 'release-f373b5c.json'), 'utf8')) as ReleaseDump;
  let upgraded: DataSource;
  let drop: () => Promise<void>;

  before(async () => {
    const empty = await emptyDatabase('upgrade');
    const url = empty.url;
    drop = async () => {
      await upgraded?.destroy();
      await empty.drop();
    };
    // That release's schema: the migrations it had applied, which are this release's first ones
    // (migrations are only ever appended).
    const names = migrations.map((m) => new m().name);
    assert.deepEqual(names.slice(0, dump.migrations.length), dump.migrations, 'the release\'s migrations are a prefix of this one\'s');
    const old = createDataSource(url);
    old.setOptions({ migrations: migrations.slice(0, dump.migrations.length) });
    await old.initialize();
    await old.runMigrations({ transaction: 'each' });
    await old.transaction(async (tx) => {
      // Raw SQL: a dump is loaded as it was written, table by table, without the triggers and
      // foreign keys that check new writes (its rows were checked when that release wrote them).
      await tx.query('SET LOCAL session_replication_role = replica');
      for (const [table, rows] of Object.entries(dump.tables)) {
        if (!rows.length) continue;
        // A row a migration seeds (a singleton) is the dump's.
        await tx.query(`DELETE FROM "${table}"`);
        // Every column but the generated ones (Postgres computes those).
        const columns = ((await tx.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND is_generated = 'NEVER' ORDER BY ordinal_position`, [table])) as Array<{ column_name: string }>)
          .map((c) => `"${c.column_name}"`)
          .join(', ');
        await tx.query(`INSERT INTO "${table}" (${columns}) SELECT ${columns} FROM json_populate_recordset(NULL::"${table}", $1::json)`, [JSON.stringify(rows)]);
      }
      // Sequences past the loaded ids.
      const serials = (await tx.query(`SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' AND column_default LIKE 'nextval(%'`)) as Array<{ table_name: string; column_name: string }>;
      for (const c of serials) await tx.query(`SELECT setval(pg_get_serial_sequence('"${c.table_name}"', '${c.column_name}'), greatest(1, (SELECT max("${c.column_name}") FROM "${c.table_name}")))`);
      // The recorded sales as of now rather than the day they were recorded, so that no window
      // this test meets depends on how long ago that was (the ledger's own times stay as booked).
      const shift = `now() - timestamptz '${dump.recorded_at}'`;
      await tx.query(`UPDATE checkout_payments SET created_at = created_at + (${shift})`);
      await tx.query(`UPDATE orders SET created_at = created_at + (${shift})`);
      await tx.query(`UPDATE checkout_sessions SET created_at = created_at + (${shift}), expires_at = expires_at + (${shift}), closed_at = closed_at + (${shift})`);
    });
    await old.destroy();
    upgraded = await openDatabase(url);
  });

  after(async () => {
    await drop?.();
  });

  const sweep = () => sweepCardMoney({ dataSource: upgraded });

  it('the migration backfills each earlier payment\'s card_payment posting and the sandbox processor\'s record of its charge', async () => {
    const payments = await upgraded.getRepository(CheckoutPayment).find();
    assert.equal(payments.length, dump.tables.checkout_payments.length);
    assert.ok(payments.length >= 3, 'the dump holds paid checkouts');
    for (const p of payments) {
      assert.equal(await upgraded.getRepository(LedgerPosting).countBy({ idempotencyKey: `card:${p.paymentRef}:paid`, kind: 'card_payment' }), 1, p.paymentRef);
      const charge = await upgraded.getRepository(SandboxCharge).findOneByOrFail({ paymentRef: p.paymentRef });
      assert.deepEqual([charge.status, charge.amountCents, charge.currency], ['approved', p.amountCents, p.currency]);
    }
  });

  it('this release\'s worker and sweep carry every order to its end: the refunded buyer gets the card back by its reference, the orders in flight complete, a completed sale refunds by its reference; reconcile is clean', async () => {
    const s = getStack();
    const taskQueue = `upgrade-${randomBytes(4).toString('hex')}`;
    const workflows: WorkflowStarter = { client: s.env.client, taskQueue };
    const worker = await suiteWorker(taskQueue, { dataSource: upgraded, starters: workflowStarters(workflows, upgraded) });
    const running = worker.run();
    try {
      await carryOn(workflows);
    } finally {
      worker.shutdown();
      await running;
    }
  });

  async function carryOn(workflows: WorkflowStarter): Promise<void> {
    // The orders in flight when that release stopped: their runs carry on under this release's
    // worker (here a fresh Temporal, so each is started again; a run resumes from its order's status).
    const orders = upgraded.getRepository(Order);
    const inFlight = (await orders.find()).filter((o) => !FINAL_ORDER_STATUSES.includes(o.status));
    assert.ok(inFlight.length >= 1, 'the dump holds orders in flight');
    for (const o of inFlight) await startOrderFulfilment(workflows, { orderId: o.id, orderPublicId: o.publicId, partnerId: o.partnerId, environment: o.environment, domain: o.domain, serviceCollected: o.paymentModel === 'service_collected' });
    for (const o of inFlight) assert.equal((await fulfilmentStepwise(o.publicId)).status, 'TRANSFER_COMPLETED', o.publicId);

    // A sale refunded by that release never gave the card back (it had no processor): the sweep does, by the payment's reference.
    await sweep();
    for (const o of await orders.findBy({ status: 'REFUNDED' })) {
      const payment = await upgraded.getRepository(CheckoutPayment).findOneByOrFail({ sessionId: o.checkoutSessionId! });
      assert.equal((await upgraded.getRepository(SandboxCharge).findOneByOrFail({ paymentRef: payment.paymentRef })).refundedCents, payment.amountCents, o.publicId);
    }
    // A sale completed under that release, refunded by the service now: reversed, the card refunded by its reference.
    const completed = (await orders.findBy({ status: 'TRANSFER_COMPLETED' })).find((o) => !inFlight.some((f) => f.id === o.id))!;
    const refund = await refundOrder({ dataSource: upgraded, workflows }, completed, 'after the upgrade', 'service');
    assert.equal(refund.status, 201);
    const payment = await upgraded.getRepository(CheckoutPayment).findOneByOrFail({ sessionId: completed.checkoutSessionId! });
    assert.equal((await upgraded.getRepository(SandboxCharge).findOneByOrFail({ paymentRef: payment.paymentRef })).refundedCents, payment.amountCents);

    assert.ok((await orders.find()).every((o) => FINAL_ORDER_STATUSES.includes(o.status)), 'every order has ended');

    // 40 days on (the sales moved back): the sweep makes payable what this release booked pending
    // (the orders that completed after the upgrade), and never again what that release booked
    // payable at the sale (which would owe the partner twice).
    // (every row: a query builder's update without a where is meant to be one)
    await upgraded.getRepository(CheckoutPayment).createQueryBuilder().update().set({ createdAt: () => "created_at - interval '40 days'" }).execute();
    await upgraded.getRepository(Order).createQueryBuilder().update().set({ createdAt: () => "created_at - interval '40 days'" }).execute();
    await sweep();
    const legacy = (dump.tables.transactions as Array<{ id: string }>).map((t) => t.id);
    assert.equal(await upgraded.getRepository(LedgerPosting).countBy({ transactionId: In(legacy), kind: 'commission_payable' }), 0, 'no commission of that release made payable again');
    for (const o of inFlight) {
      const txn = await upgraded.getRepository(SaleTransaction).findOneByOrFail({ orderId: o.id });
      assert.equal(await upgraded.getRepository(LedgerPosting).countBy({ transactionId: txn.id, kind: 'commission_payable' }), 1, `${o.publicId}: payable after its window`);
    }
    const report = await reconcile(upgraded);
    assert.deepEqual(report.differences, []);
    assert.equal(report.ok, true);
  }
});
