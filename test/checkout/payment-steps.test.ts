import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import { checkoutDeps } from '../../src/api/app';
import { CheckoutPayment, CheckoutSession } from '../../src/db/entities/checkout-session';
import { Domain } from '../../src/db/entities/domain';
import { LedgerPosting } from '../../src/db/entities/ledger-posting';
import { Order } from '../../src/db/entities/order';
import { SandboxCharge, SandboxRefund } from '../../src/db/entities/sandbox-charge';
import { randomUUID } from 'node:crypto';
import { importInventory } from '../../src/discovery/inventory';
import { refundCompletedSale } from '../../src/orders/refunds';
import { payForSession, paymentKey } from '../../src/checkout/sessions';
import { SANDBOX_CARDS, SandboxCardProcessor, type Authorization, type CardPayment, type PaymentPort } from '../../src/checkout/payments';
import { reconcile } from '../../src/finance/reconcile';
import { refundOrder } from '../../src/orders/refund-requests';
import { freshDomain, fulfilmentStepwise } from '../helpers/orders';
import { admin } from '../helpers/admin';
import { recordHistory } from '../helpers/histories';
import { runPayouts } from '../../src/finance/payouts';
import { SaleTransaction } from '../../src/db/entities/sale-transaction';
import { checkoutWorkflowId } from '../../workflows/messages';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';

const BUYER = { name: 'Jane Buyer', email: 'jane@example.com', registrant: {} };
const card = (number: string) => ({ cardNumber: number, expiryMonth: 12, expiryYear: 2099, cvc: '123' });

/** The sandbox processor, with what a test injects around its authorisation. */
class ProcessorWith implements PaymentPort {
  readonly inner = new SandboxCardProcessor(getStack().dataSource);
  constructor(private readonly around: { during?: (p: CardPayment) => Promise<void>; after?: (a: Authorization) => void } = {}) {}
  async authorize(p: CardPayment): Promise<Authorization> {
    await this.around.during?.(p);
    const auth = await this.inner.authorize(p);
    this.around.after?.(auth);
    return auth;
  }
  retrieve(key: string) {
    return this.inner.retrieve(key);
  }
  void(ref: string) {
    return this.inner.void(ref);
  }
  refund(ref: string, cents: number, key: string) {
    return this.inner.refund(ref, cents, key);
  }
}

/**
 * The card is never charged without an order (CONTRACT §15): a payment is claimed in one short
 * transaction, authorised outside any, and recorded in a second; a crash in between is settled
 * by the recovery sweep; refunds and failed transfers give the money back through the processor.
 */
describe('hosted checkout: a payment in three steps, settled after a crash, refunded through the processor', function () {
  ownTemporal();
  this.timeout(60_000);

  async function openSession(): Promise<{ sessionId: string; domain: string; partnerId: string }> {
    const { client, partnerId } = await newPartner();
    const { name } = await freshDomain();
    const res = await client.post<{ session_id: string }>('/api/partner/v1/checkout-session', { domain: name });
    assert.equal(res.status, 201, res.text);
    return { sessionId: res.body.session_id, domain: name, partnerId };
  }

  const sweep = async (processor: PaymentPort) => {
    const s = getStack();
    const activities = createActivities({ dataSource: s.dataSource, masterKey: s.masterKey, payments: { sandbox: processor } });
    return (await new MockActivityEnvironment().run(activities.settleStalledPayments, { olderThanSeconds: 0 })) as number;
  };
  const session = (id: string) => getStack().dataSource.getRepository(CheckoutSession).findOneByOrFail({ publicId: id });
  const domainRow = (name: string) => getStack().dataSource.getRepository(Domain).findOneByOrFail({ environment: 'sandbox', name });

  it('the processor is called outside any transaction, with the name held and the session marked paying', async () => {
    const s = getStack();
    const { sessionId, domain } = await openSession();
    let seen: { sessionLockable: boolean; domainStatus: string; paying: boolean; key: string } | undefined;
    const processor = new ProcessorWith({
      during: async (p) => {
        // Another connection can lock the session's row at once (NOWAIT): nothing holds it.
        const lockable = await s.dataSource.transaction(async (tx) =>
          tx.getRepository(CheckoutSession).createQueryBuilder('c').setLock('pessimistic_write').setOnLocked('nowait').where('c.public_id = :sessionId', { sessionId }).getOne().then(() => true, () => false),
        );
        seen = { sessionLockable: lockable, domainStatus: (await domainRow(domain)).status, paying: (await session(sessionId)).payingSince !== null, key: p.idempotencyKey };
      },
    });
    const outcome = await payForSession(checkoutDeps({ ...s.appDeps, payments: { sandbox: processor } }), sessionId, card(SANDBOX_CARDS.approved), BUYER);
    assert.equal(outcome.kind, 'paid');
    assert.deepEqual(seen, { sessionLockable: true, domainStatus: 'reserved', paying: true, key: paymentKey(sessionId, 1) });
    const after = await session(sessionId);
    assert.deepEqual([after.status, after.payingSince, (await domainRow(domain)).status], ['complete', null, 'sold']);
  });

  it('a crash after the approval, before the record: the sweep records the order from the processor\'s answer; one charge, one order', async () => {
    const s = getStack();
    const { sessionId, domain } = await openSession();
    const crashing = new ProcessorWith({
      after: () => {
        throw new Error('the process died');
      },
    });
    await assert.rejects(payForSession(checkoutDeps({ ...s.appDeps, payments: { sandbox: crashing } }), sessionId, card(SANDBOX_CARDS.approved), BUYER), /the process died/);
    const left = await session(sessionId);
    assert.ok(left.payingSince, 'left paying');
    assert.equal((await domainRow(domain)).status, 'reserved', 'the name still held');
    const charge = await s.dataSource.getRepository(SandboxCharge).findOneByOrFail({ idempotencyKey: paymentKey(sessionId, 1) });
    assert.equal(charge.status, 'approved');
    assert.equal(await s.dataSource.getRepository(Order).countBy({ checkoutSessionId: left.id }), 0, 'a charge and no order: what the sweep is for');

    assert.ok((await sweep(crashing.inner)) >= 1);
    const settled = await session(sessionId);
    assert.deepEqual([settled.status, settled.payingSince], ['complete', null]);
    const order = await s.dataSource.getRepository(Order).findOneByOrFail({ checkoutSessionId: settled.id });
    assert.equal(order.externalPaymentRef, charge.paymentRef);
    assert.equal((await s.dataSource.getRepository(CheckoutPayment).findOneByOrFail({ sessionId: settled.id })).paymentRef, charge.paymentRef);
    assert.ok(await s.dataSource.getRepository(LedgerPosting).existsBy({ idempotencyKey: `card:${charge.paymentRef}:paid` }), 'the card payment booked');
    assert.equal(await sweep(crashing.inner), 0, 'nothing left to settle');
    // The buyer submitting again sees the same order and is not charged twice.
    const again = await payForSession(checkoutDeps({ ...s.appDeps, payments: { sandbox: crashing.inner } }), sessionId, card(SANDBOX_CARDS.approved), BUYER);
    assert.deepEqual([again.kind, again.kind === 'paid' && again.orderPublicId], ['paid', order.publicId]);
    assert.equal(await s.dataSource.getRepository(SandboxCharge).count({ where: { idempotencyKey: paymentKey(sessionId, 1) } }), 1);
    assert.equal((await s.dataSource.getRepository(SandboxCharge).createQueryBuilder('c').where('c.idempotency_key LIKE :k', { k: `${sessionId}:%` }).getCount()), 1, 'one charge');
  });

  it('a crash after a decline, or before the processor saw the card: the sweep gives the name back and the session takes a payment again', async () => {
    const s = getStack();
    const { sessionId, domain } = await openSession();
    const crashing = new ProcessorWith({
      after: () => {
        throw new Error('the process died');
      },
    });
    await assert.rejects(payForSession(checkoutDeps({ ...s.appDeps, payments: { sandbox: crashing } }), sessionId, card(SANDBOX_CARDS.declined), BUYER));
    const unseen = new ProcessorWith({
      during: () => Promise.reject(new Error('the process died before the call')),
    });
    assert.ok((await sweep(crashing.inner)) >= 1);
    let row = await session(sessionId);
    assert.deepEqual([row.status, row.payingSince, row.declinedAttempts, (await domainRow(domain)).status], ['open', null, 1, 'listed']);
    await assert.rejects(payForSession(checkoutDeps({ ...s.appDeps, payments: { sandbox: unseen } }), sessionId, card(SANDBOX_CARDS.approved), BUYER));
    assert.ok((await sweep(crashing.inner)) >= 1);
    row = await session(sessionId);
    assert.deepEqual([row.status, row.payingSince, row.declinedAttempts, (await domainRow(domain)).status], ['open', null, 1, 'listed'], 'never sent: no decline counted');
    const paid = await payForSession(checkoutDeps({ ...s.appDeps, payments: { sandbox: crashing.inner } }), sessionId, card(SANDBOX_CARDS.approved), BUYER);
    assert.equal(paid.kind, 'paid');
    assert.equal((await session(sessionId)).paymentAttempt, 3);
  });

  it('the sale\'s 30-day refund window is the checkout workflow\'s timer: when it ends the commission becomes payable, a payout takes it, and a refund is refused', async () => {
    const s = getStack();
    const { sessionId } = await openSession();
    const outcome = await payForSession(checkoutDeps(s.appDeps), sessionId, card(SANDBOX_CARDS.approved), BUYER);
    assert.equal(outcome.kind, 'paid');
    const order = await s.dataSource.getRepository(Order).findOneByOrFail({ publicId: outcome.kind === 'paid' ? outcome.orderPublicId : '' });
    const checkout = s.env.client.workflow.getHandle(checkoutWorkflowId(sessionId));
    // The order completes on its workflow; the commission stays pending: nothing payable yet.
    assert.equal((await fulfilmentStepwise(order.publicId)).status, 'TRANSFER_COMPLETED');
    const txn = await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: order.id });
    assert.equal(await s.dataSource.getRepository(LedgerPosting).countBy({ idempotencyKey: `transaction:${txn.id}:payable` }), 0);
    assert.equal((await checkout.describe()).status.name, 'RUNNING', 'the session workflow holds the window');
    // Thirty days on the workflow's clock.
    assert.equal(await checkout.result(), 'complete');
    await recordHistory(checkoutWorkflowId(sessionId), 'checkout-complete-window');
    assert.equal(await s.dataSource.getRepository(LedgerPosting).countBy({ idempotencyKey: `transaction:${txn.id}:payable` }), 1);
    const refused = await admin('order', 'refund', order.publicId, '--json');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /refund window has closed/);
    const paid = await runPayouts(s.dataSource, 'sandbox', new Date());
    assert.ok(paid.some((p) => p.breakdown.service_collected_cents === txn.commissionCents), JSON.stringify(paid));
    assert.equal((await s.dataSource.getRepository(SaleTransaction).findOneByOrFail({ id: txn.id })).status, 'completed');
  });

  it('the service\'s refund of a completed sale and a failed transfer give the buyer\'s money back through the processor, once, and the ledger shows it', async () => {
    const s = getStack();
    const processor = new SandboxCardProcessor(s.dataSource);
    // Orders whose steps this test runs itself: their fulfilment is started on a queue no worker serves.
    const deps = checkoutDeps({ ...s.appDeps, workflows: { client: s.env.client, taskQueue: 'no-worker-serves-this' }, payments: { sandbox: processor } });
    const activities = createActivities({ dataSource: s.dataSource, masterKey: s.masterKey, payments: { sandbox: processor } });
    const run = (to: string, orderId: string) => new MockActivityEnvironment().run(activities.advanceOrder, { orderId, to: to as never, at: new Date().toISOString() });
    const paidOrder = async () => {
      const { sessionId } = await openSession();
      const outcome = await payForSession(deps, sessionId, card(SANDBOX_CARDS.approved), BUYER);
      assert.equal(outcome.kind, 'paid');
      const order = await s.dataSource.getRepository(Order).findOneByOrFail({ publicId: outcome.kind === 'paid' ? outcome.orderPublicId : '' });
      return { order, charge: await s.dataSource.getRepository(SandboxCharge).findOneByOrFail({ paymentRef: order.externalPaymentRef }) };
    };
    const refundedCents = async (id: string) => (await s.dataSource.getRepository(SandboxCharge).findOneByOrFail({ id })).refundedCents;
    const booked = (ref: string) => s.dataSource.getRepository(LedgerPosting).countBy({ idempotencyKey: `card:${ref}:refunded` });

    // A transfer that fails: the activity that records it refunds the card (twice run, once refunded).
    const failed = await paidOrder();
    await run('DOMAIN_LOCKED', failed.order.id);
    await run('TRANSFER_FAILED', failed.order.id);
    await run('TRANSFER_FAILED', failed.order.id);
    assert.deepEqual([await refundedCents(failed.charge.id), await booked(failed.charge.paymentRef)], [failed.charge.amountCents, 1]);

    // A completed sale refunded by the service (admin order refund), asked twice.
    const sold = await paidOrder();
    for (const to of ['DOMAIN_LOCKED', 'TRANSFER_INITIATED', 'TRANSFER_PENDING', 'TRANSFER_COMPLETED']) await run(to, sold.order.id);
    const refundDeps = { dataSource: s.dataSource, workflows: s.appDeps.workflows, payments: { sandbox: processor } };
    const first = await refundOrder(refundDeps, await s.dataSource.getRepository(Order).findOneByOrFail({ id: sold.order.id }), 'buyer asked', 'service');
    const second = await refundOrder(refundDeps, await s.dataSource.getRepository(Order).findOneByOrFail({ id: sold.order.id }), 'buyer asked', 'service');
    assert.deepEqual([first.status, second.status], [201, 200]);
    assert.deepEqual([await refundedCents(sold.charge.id), await booked(sold.charge.paymentRef)], [sold.charge.amountCents, 1]);

    const report = await reconcile(s.dataSource, 'sandbox');
    assert.deepEqual(report.differences.filter((d) => [failed.order.publicId, sold.order.publicId].includes(d.id)), []);
  });
  describe('the buyer\'s card back, whatever stops on the way', () => {
    const s = () => getStack();
    const processor = () => new SandboxCardProcessor(getStack().dataSource);
    // Orders whose steps these tests run themselves: their fulfilment is started on a queue no worker serves.
    const deps = () => checkoutDeps({ ...s().appDeps, workflows: { client: s().env.client, taskQueue: 'no-worker-serves-this' }, payments: { sandbox: processor() } });
    const steps = async (orderId: string, ...to: string[]) => {
      const activities = createActivities({ dataSource: s().dataSource, masterKey: s().masterKey, payments: { sandbox: processor() } });
      for (const status of to) await new MockActivityEnvironment().run(activities.advanceOrder, { orderId, to: status as never, at: new Date().toISOString() });
    };
    const COMPLETE = ['DOMAIN_LOCKED', 'TRANSFER_INITIATED', 'TRANSFER_PENDING', 'TRANSFER_COMPLETED'];
    const paidOrder = async (sessionId: string) => {
      const outcome = await payForSession(deps(), sessionId, card(SANDBOX_CARDS.approved), BUYER);
      assert.equal(outcome.kind, 'paid', JSON.stringify(outcome));
      return s().dataSource.getRepository(Order).findOneByOrFail({ publicId: outcome.kind === 'paid' ? outcome.orderPublicId : '' });
    };
    const cardDifferences = async (publicId: string) => (await reconcile(s().dataSource, 'sandbox')).differences.filter((d) => d.id === publicId).map((d) => d.field);
    const refundsBooked = (ref: string) => s().dataSource.getRepository(LedgerPosting).countBy({ idempotencyKey: `card:${ref}:refunded` });

    it('a zero-price sale (the inventory allows price 0): paid, then refunded by the service after completion, or after a failed transfer, with no refund of 0 asked of the processor; reconcile stays clean', async () => {
      const { client } = await newPartner();
      const zeroSession = async () => {
        const name = `zero-${randomUUID().slice(0, 8)}.com`;
        await importInventory(s().dataSource, 'sandbox', [{ name, category: 'business', buy_now_price_cents: 0, floor_price_cents: 0, currency: 'USD', status: 'listed', active_site: false }]);
        const res = await client.post<{ session_id: string; price_cents: number }>('/api/partner/v1/checkout-session', { domain: name });
        assert.deepEqual([res.status, res.body.price_cents], [201, 0], res.text);
        return res.body.session_id;
      };
      const refundDeps = { dataSource: s().dataSource, workflows: s().appDeps.workflows, payments: { sandbox: processor() } };
      const sold = await paidOrder(await zeroSession());
      await steps(sold.id, ...COMPLETE);
      const refunded = await refundOrder(refundDeps, await s().dataSource.getRepository(Order).findOneByOrFail({ id: sold.id }), 'buyer asked', 'service');
      assert.deepEqual([refunded.status, refunded.refund.amount_cents], [201, 0]);
      const failed = await paidOrder(await zeroSession());
      await steps(failed.id, 'DOMAIN_LOCKED', 'TRANSFER_FAILED');
      for (const order of [sold, failed]) {
        assert.equal(await refundsBooked(order.externalPaymentRef), 1, 'the card refund booked (of nothing)');
        assert.equal(await s().dataSource.getRepository(SandboxRefund).countBy({ idempotencyKey: `refund:${order.id}` }), 0, 'the processor was asked for no refund of 0');
        assert.deepEqual(await cardDifferences(order.publicId), []);
      }
    });

    it('an operator\'s refund whose process dies after the reversal commits: the recovery sweep refunds the buyer\'s card within its next round, once', async () => {
      const { sessionId } = await openSession();
      const sold = await paidOrder(sessionId);
      await steps(sold.id, ...COMPLETE);
      const charge = await s().dataSource.getRepository(SandboxCharge).findOneByOrFail({ paymentRef: sold.externalPaymentRef });
      // What `admin order refund` commits first; the process dies before the card is refunded.
      await refundCompletedSale(s().dataSource, sold.id, 'buyer asked', new Date());
      assert.equal((await s().dataSource.getRepository(SandboxCharge).findOneByOrFail({ id: charge.id })).refundedCents, 0);
      assert.deepEqual(await cardDifferences(sold.publicId), ["buyer's card refunded (order REFUNDED)"], 'until the sweep: a difference');
      assert.ok((await sweep(processor())) >= 1);
      assert.equal((await s().dataSource.getRepository(SandboxCharge).findOneByOrFail({ id: charge.id })).refundedCents, charge.amountCents);
      assert.equal(await refundsBooked(charge.paymentRef), 1);
      await sweep(processor());
      assert.deepEqual([(await s().dataSource.getRepository(SandboxCharge).findOneByOrFail({ id: charge.id })).refundedCents, await refundsBooked(charge.paymentRef)], [charge.amountCents, 1], 'once');
      assert.deepEqual(await cardDifferences(sold.publicId), []);
    });
  });
});
