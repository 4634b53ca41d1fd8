import assert from 'node:assert/strict';
import { checkoutDeps } from '../../src/api/app';
import { Domain } from '../../src/db/entities/domain';
import { LedgerPosting } from '../../src/db/entities/ledger-posting';
import { Order } from '../../src/db/entities/order';
import { SandboxCharge, SandboxRefund } from '../../src/db/entities/sandbox-charge';
import { CardAttemptCheck, CheckoutPayment, CheckoutSession } from '../../src/db/entities/checkout-session';
import { randomUUID } from 'node:crypto';
import { importInventory } from '../../src/discovery/inventory';
import { refundCompletedSale } from '../../src/orders/refunds';
import { bookCardMoney } from '../../src/checkout/card-refunds';
import { payForSession, paymentKey } from '../../src/checkout/sessions';
import { SANDBOX_CARDS, SandboxCardProcessor, type Authorization, type CardPayment, type PaymentPort } from '../../src/checkout/payments';
import { reconcile } from '../../src/finance/reconcile';
import { refundOrder } from '../../src/orders/refund-requests';
import { freshDomain, fulfilmentStepwise } from '../helpers/orders';
import { advanceOrderThrough, sweepCardMoney, TO_COMPLETED } from '../helpers/activities';
import type { OrderStatus } from '../../workflows/messages';
import { admin } from '../helpers/admin';
import { recordHistory } from '../helpers/histories';
import { runPayouts } from '../../src/finance/payouts';
import { SaleTransaction } from '../../src/db/entities/sale-transaction';
import { checkoutWorkflowId, orderWorkflowId } from '../../workflows/messages';
import { workflowStarters } from '../../src/temporal/starters';
import type { WorkflowStarter } from '../../src/temporal/start';
import { completedSale } from '../helpers/money';
import { waitFor } from '../helpers/wait';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';

const BUYER = { name: 'Jane Buyer', email: 'jane@example.com', registrant: {}, browser: 'browser-of-jane' };
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

  /**
   * Orders whose steps a test runs itself have their fulfilment started on a queue no worker
   * serves. Each is ended after its test: a workflow task left waiting there would stop the
   * time-skipping server from skipping time for the tests after it.
   */
  const unservedOrders: string[] = [];
  const unserved = (): WorkflowStarter => ({ client: getStack().env.client, taskQueue: 'no-worker-serves-this' });
  afterEach(async () => {
    for (const id of unservedOrders.splice(0)) await getStack().env.client.workflow.getHandle(orderWorkflowId(id)).terminate('its steps were run by the test').catch(() => undefined);
  });

  async function openSession(): Promise<{ sessionId: string; domain: string; partnerId: string }> {
    const { client, partnerId } = await newPartner();
    const { name } = await freshDomain();
    const res = await client.post<{ session_id: string }>('/api/partner/v1/checkout-session', { domain: name });
    assert.equal(res.status, 201, res.text);
    return { sessionId: res.body.session_id, domain: name, partnerId };
  }

  const sweep = (processor: PaymentPort) => sweepCardMoney({ payments: { sandbox: processor } });
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

  describe('a slow processor never leaves a charge without an order, nor a receipt in the wrong browser', () => {
    const s = () => getStack();
    /** A processor that answers only once the test opens its gate (a slow one). */
    const gated = () => {
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      return { processor: new ProcessorWith({ during: () => gate }), open };
    };
    const depsWith = (processor: PaymentPort) => ({ ...checkoutDeps({ ...s().appDeps, payments: { sandbox: processor } }), authorizeDeadlineMs: 100 });
    const charge = (sessionId: string, attempt: number) => s().dataSource.getRepository(SandboxCharge).findOneBy({ idempotencyKey: paymentKey(sessionId, attempt) });
    const check = (sessionId: string, attempt: number) => s().dataSource.getRepository(CardAttemptCheck).findOneBy({ idempotencyKey: paymentKey(sessionId, attempt) });
    /** What reconcile says about the processor's charges of one session. */
    const processorDifferences = async (sessionId: string) => {
      const refs = (await s().dataSource.getRepository(SandboxCharge).createQueryBuilder('c').where('c.idempotency_key LIKE :k', { k: `${sessionId}:%` }).getMany()).map((c) => c.paymentRef);
      return (await reconcile(s().dataSource, 'sandbox')).differences.filter((d) => d.kind === 'card_charge' && refs.includes(d.id));
    };

    it('past the deadline the buyer is told the payment is being confirmed; the late approval becomes the order, shown again only to the browser that paid, never to one that knows the email and card digits', async () => {
      const { sessionId } = await openSession();
      const slow = gated();
      const first = await payForSession(depsWith(slow.processor), sessionId, card(SANDBOX_CARDS.approved), BUYER);
      assert.equal(first.kind, 'pending');
      assert.ok((await session(sessionId)).payingSince, 'the attempt stays out, the name held');
      slow.open();
      const done = await waitFor(() => session(sessionId), (row) => row.status === 'complete', 10_000, 'the late approval recorded');
      const order = await s().dataSource.getRepository(Order).findOneByOrFail({ id: done.orderId! });
      const again = await payForSession(depsWith(slow.processor.inner), sessionId, card(SANDBOX_CARDS.approved), BUYER);
      assert.deepEqual([again.kind, again.kind === 'paid' && again.orderPublicId], ['paid', order.publicId], 'the paying browser sees its order');
      const guess = await payForSession(depsWith(slow.processor.inner), sessionId, card(SANDBOX_CARDS.approved), { ...BUYER, browser: 'browser-of-someone-else' });
      assert.equal(guess.kind, 'unavailable', 'the same email and card digits from another browser are told the name is gone');
      assert.equal(JSON.stringify(guess).includes(order.publicId), false);
    });

    it('a shared session: the sweep gives up the first buyer\'s unanswered attempt, a second buyer pays, and the first\'s late approval is voided at once; the first is never shown the second\'s receipt', async () => {
      const { sessionId, domain } = await openSession();
      const slow = gated();
      const first = await payForSession(depsWith(slow.processor), sessionId, card(SANDBOX_CARDS.approved), BUYER);
      assert.equal(first.kind, 'pending');
      // The sweep finds it out too long; the processor has no answer yet: the name goes back, the attempt is kept.
      assert.ok((await sweep(slow.processor.inner)) >= 1);
      assert.deepEqual([(await session(sessionId)).payingSince, (await domainRow(domain)).status], [null, 'listed']);
      assert.equal((await check(sessionId, 1))?.resolvedAt, null, 'asked again until the processor answers');
      const second = await payForSession(depsWith(slow.processor.inner), sessionId, card(SANDBOX_CARDS.approved), { ...BUYER, email: 'second@example.com', browser: 'browser-of-the-second' });
      assert.equal(second.kind, 'paid');
      // The processor approves the first attempt now: no sale can record it, so it is voided.
      slow.open();
      await waitFor(() => charge(sessionId, 1), (c) => c?.status === 'voided', 10_000, 'the late approval voided');
      await sweep(slow.processor.inner);
      assert.equal((await check(sessionId, 1))?.outcome, 'voided');
      const firstAgain = await payForSession(depsWith(slow.processor.inner), sessionId, card(SANDBOX_CARDS.approved), BUYER);
      assert.equal(firstAgain.kind, 'unavailable', 'the first buyer is told the name is gone, not shown the second\'s order');
      assert.equal((await charge(sessionId, 2))?.status, 'approved');
      assert.deepEqual(await processorDifferences(sessionId), []);
    });

    it('the payer\'s process gone: an approval the processor records after the sweep gave the attempt up is voided by the next round; one never seen is settled after a day', async () => {
      const { sessionId } = await openSession();
      const hung = new ProcessorWith({ during: () => new Promise<void>(() => undefined) });
      assert.equal((await payForSession(depsWith(hung), sessionId, card(SANDBOX_CARDS.approved), BUYER)).kind, 'pending');
      await sweep(hung.inner);
      // The processor's late approval, with nobody left to record it.
      const late = await hung.inner.authorize({ ...card(SANDBOX_CARDS.approved), idempotencyKey: paymentKey(sessionId, 1), amountCents: (await session(sessionId)).priceCents, currency: 'USD' });
      assert.equal(late.approved, true);
      assert.deepEqual(await processorDifferences(sessionId), [], 'followed up: no difference while the sweep has it');
      await s().dataSource.getRepository(CardAttemptCheck).update({ idempotencyKey: paymentKey(sessionId, 1) }, { resolvedAt: () => 'now()' });
      assert.deepEqual((await processorDifferences(sessionId)).map((d) => d.field), ['charge at the processor without a payment'], 'a charge nobody follows up is a difference');
      await s().dataSource.getRepository(CardAttemptCheck).update({ idempotencyKey: paymentKey(sessionId, 1) }, { resolvedAt: null });
      assert.ok((await sweep(hung.inner)) >= 1);
      assert.deepEqual([(await charge(sessionId, 1))?.status, (await check(sessionId, 1))?.outcome], ['voided', 'voided']);

      // Another attempt the processor never saw: asked each round, settled as never seen a day after it was given up.
      const { sessionId: other } = await openSession();
      assert.equal((await payForSession(depsWith(hung), other, card(SANDBOX_CARDS.approved), BUYER)).kind, 'pending');
      await sweep(hung.inner);
      await sweep(hung.inner);
      const asked = await check(other, 1);
      assert.deepEqual([asked?.resolvedAt, (asked?.asks ?? 0) >= 1], [null, true]);
      await s().dataSource.getRepository(CardAttemptCheck).update({ id: asked!.id }, { releasedAt: () => "now() - interval '25 hours'" });
      await sweep(hung.inner);
      assert.equal((await check(other, 1))?.outcome, 'never_seen');
      assert.equal(await charge(other, 1), null);
    });
  });

  describe('the 30-day window is one clock: from the payment\'s recorded time, whatever signal is lost', () => {
    const s = () => getStack();
    const DAY = 24 * 60 * 60 * 1000;
    /**
     * The suite's client with something lost on the way: every signal (the frontend unreachable
     * at that moment), or the start of an order's fulfilment (a sale whose transfer never moves
     * until the test moves it).
     */
    const losing = (lost: 'signals' | 'fulfilment'): WorkflowStarter => {
      const { client, taskQueue } = s().appDeps.workflows;
      const bound = <T extends object>(target: T, swap: (prop: PropertyKey) => unknown) =>
        new Proxy(target, {
          get(t, prop) {
            const swapped = swap(prop);
            if (swapped !== undefined) return swapped;
            const value = Reflect.get(t, prop, t) as unknown;
            return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
          },
        });
      const workflow = bound(client.workflow, (prop) => {
        if (lost === 'signals' && prop === 'getHandle') {
          return (...args: Parameters<typeof client.workflow.getHandle>) => bound(client.workflow.getHandle(...args), (p) => (p === 'signal' ? () => Promise.reject(new Error('the signal was lost')) : undefined));
        }
        if (lost === 'fulfilment' && prop === 'start') {
          return (type: string, options: Parameters<typeof client.workflow.start>[1]) => (type === 'orderFulfilmentWorkflow' ? Promise.resolve(undefined) : client.workflow.start(type, options));
        }
        return undefined;
      });
      return { client: bound(client, (prop) => (prop === 'workflow' ? workflow : undefined)), taskQueue };
    };
    const sweepWithStarters = () => sweepCardMoney({ starters: workflowStarters(s().appDeps.workflows, s().dataSource) });
    /** Moves the sale's recorded payment `days` into the past on the database's clock (which the time-skipping server does not move). */
    const paidDaysAgo = (sessionId: string, days: number) =>
      s().dataSource.getRepository(CheckoutPayment).update({ sessionId }, { createdAt: () => `now() - make_interval(days => ${days})` });
    const payable = async (orderId: string) => {
      const txn = await s().dataSource.getRepository(SaleTransaction).findOneBy({ orderId });
      return txn ? s().dataSource.getRepository(LedgerPosting).countBy({ idempotencyKey: `transaction:${txn.id}:payable` }) : 0;
    };

    it('a paid signal lost for 6 days is delivered by the recovery sweep, and the window still ends 30 days after the payment (day 30, not day 36)', async () => {
      const { sessionId } = await openSession();
      const outcome = await payForSession(checkoutDeps({ ...s().appDeps, workflows: losing('signals') }), sessionId, card(SANDBOX_CARDS.approved), BUYER);
      assert.equal(outcome.kind, 'paid');
      const paid = await session(sessionId);
      assert.equal(paid.paidSignalledAt, null, 'the session knows its workflow was not told');
      const order = await s().dataSource.getRepository(Order).findOneByOrFail({ id: paid.orderId! });
      assert.equal((await fulfilmentStepwise(order.publicId)).status, 'TRANSFER_COMPLETED');
      // Six days pass on both clocks before the sweep gets the signal through.
      await s().env.sleep('6 days');
      await paidDaysAgo(paid.id, 6);
      assert.ok((await sweepWithStarters()) >= 1);
      assert.ok((await session(sessionId)).paidSignalledAt, 'marked told');
      const checkout = s().env.client.workflow.getHandle(checkoutWorkflowId(sessionId));
      await waitFor(async () => (await checkout.describe()).searchAttributes.BusinessStatus, (status) => JSON.stringify(status) === '["refund_window"]', 30_000, 'the window held');
      await s().env.sleep(23 * DAY);
      assert.equal(await payable(order.id), 0, 'day 29: still refundable');
      await s().env.sleep(2 * DAY);
      assert.equal(await checkout.result(), 'complete');
      await recordHistory(checkoutWorkflowId(sessionId), 'checkout-window-lost-signal');
      assert.equal(await payable(order.id), 1, 'day 31 after the payment: payable');
    });

    it('a sale whose transfer is still under way when the window ends: the session workflow ends, and the booking makes the commission payable at once', async () => {
      const { sessionId } = await openSession();
      // Its fulfilment never starts: the transfer stays under way until this test moves it.
      const outcome = await payForSession(checkoutDeps({ ...s().appDeps, workflows: losing('fulfilment') }), sessionId, card(SANDBOX_CARDS.approved), BUYER);
      assert.equal(outcome.kind, 'paid');
      const paid = await session(sessionId);
      const checkout = s().env.client.workflow.getHandle(checkoutWorkflowId(sessionId));
      assert.equal(await checkout.result(), 'complete', 'the workflow ends: no daily loop waits for the booking');
      await recordHistory(checkoutWorkflowId(sessionId), 'checkout-window-not-booked');
      assert.equal(await payable(paid.orderId!), 0, 'not booked yet');
      // The transfer completes on day 31 (the database's clock moved with it).
      await paidDaysAgo(paid.id, 31);
      await advanceOrderThrough(paid.orderId!, TO_COMPLETED);
      assert.equal(await payable(paid.orderId!), 1, 'payable at once');
      const refused = await admin('order', 'refund', (await s().dataSource.getRepository(Order).findOneByOrFail({ id: paid.orderId! })).publicId, '--json');
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /refund window has closed/);
    });

    it('the refund path itself refuses a sale paid more than 30 days ago, payable posting or not; the sweep makes such a pending commission payable, and reconcile names it until then', async () => {
      const { partnerId } = await newPartner();
      const order = await completedSale(partnerId, new Date().toISOString(), { paymentModel: 'service_collected' });
      const txn = await s().dataSource.getRepository(SaleTransaction).findOneByOrFail({ orderId: order.id });
      // A sale of 32 days ago whose session workflow never made it payable (ended before that step existed).
      await s().dataSource.getRepository(Order).update({ id: order.id }, { createdAt: () => "now() - interval '32 days'" });
      assert.equal(await payable(order.id), 0);
      await assert.rejects(refundOrder({ dataSource: s().dataSource, workflows: s().appDeps.workflows }, await s().dataSource.getRepository(Order).findOneByOrFail({ id: order.id }), 'too late', 'service'), /refund window has closed/);
      assert.equal((await s().dataSource.getRepository(Order).findOneByOrFail({ id: order.id })).status, 'TRANSFER_COMPLETED', 'nothing changed');
      const about = async () => (await reconcile(s().dataSource, 'sandbox')).differences.filter((d) => d.id === txn.publicId).map((d) => d.field);
      assert.deepEqual(await about(), ['commission after its 30-day refund window']);
      assert.ok((await sweepWithStarters()) >= 1);
      assert.equal(await payable(order.id), 1);
      assert.deepEqual(await about(), []);
    });
  });
  describe('the buyer\'s card back, whatever stops on the way', () => {
    const s = () => getStack();
    const processor = () => new SandboxCardProcessor(getStack().dataSource);
    // Orders whose steps these tests run themselves: their fulfilment is started on a queue no worker serves.
    const deps = () => checkoutDeps({ ...s().appDeps, workflows: unserved(), payments: { sandbox: processor() } });
    const steps = (orderId: string, ...to: OrderStatus[]) => advanceOrderThrough(orderId, to, { payments: { sandbox: processor() } });
    const paidOrder = async (sessionId: string) => {
      const outcome = await payForSession(deps(), sessionId, card(SANDBOX_CARDS.approved), BUYER);
      assert.equal(outcome.kind, 'paid', JSON.stringify(outcome));
      if (outcome.kind === 'paid') unservedOrders.push(outcome.orderPublicId);
      return s().dataSource.getRepository(Order).findOneByOrFail({ publicId: outcome.kind === 'paid' ? outcome.orderPublicId : '' });
    };
    const cardDifferences = async (publicId: string) => (await reconcile(s().dataSource, 'sandbox')).differences.filter((d) => d.id === publicId).map((d) => d.field);
    const refundsBooked = (ref: string) => s().dataSource.getRepository(LedgerPosting).countBy({ idempotencyKey: `card:${ref}:refunded` });

    it('the service\'s refund of a completed sale and a failed transfer give the buyer\'s money back through the processor, once, and the ledger shows it', async () => {
      const s = getStack();
      const processor = new SandboxCardProcessor(s.dataSource);
      // Orders whose steps this test runs itself: their fulfilment is started on a queue no worker serves.
      const deps = checkoutDeps({ ...s.appDeps, workflows: unserved(), payments: { sandbox: processor } });
      const paidOrder = async () => {
        const { sessionId } = await openSession();
        const outcome = await payForSession(deps, sessionId, card(SANDBOX_CARDS.approved), BUYER);
        assert.equal(outcome.kind, 'paid');
        const order = await s.dataSource.getRepository(Order).findOneByOrFail({ publicId: outcome.kind === 'paid' ? outcome.orderPublicId : '' });
        unservedOrders.push(order.publicId);
        return { order, charge: await s.dataSource.getRepository(SandboxCharge).findOneByOrFail({ paymentRef: order.externalPaymentRef }) };
      };
      const refundedCents = async (id: string) => (await s.dataSource.getRepository(SandboxCharge).findOneByOrFail({ id })).refundedCents;
      const booked = (ref: string) => s.dataSource.getRepository(LedgerPosting).countBy({ idempotencyKey: `card:${ref}:refunded` });

      // A transfer that fails: the activity that records it refunds the card (twice run, once refunded).
      const failed = await paidOrder();
      await advanceOrderThrough(failed.order.id, ['DOMAIN_LOCKED', 'TRANSFER_FAILED', 'TRANSFER_FAILED'], { payments: { sandbox: processor } });
      assert.deepEqual([await refundedCents(failed.charge.id), await booked(failed.charge.paymentRef)], [failed.charge.amountCents, 1]);

      // A completed sale refunded by the service (admin order refund), asked twice.
      const sold = await paidOrder();
      await advanceOrderThrough(sold.order.id, TO_COMPLETED, { payments: { sandbox: processor } });
      const refundDeps = { dataSource: s.dataSource, workflows: s.appDeps.workflows, payments: { sandbox: processor } };
      const first = await refundOrder(refundDeps, await s.dataSource.getRepository(Order).findOneByOrFail({ id: sold.order.id }), 'buyer asked', 'service');
      const second = await refundOrder(refundDeps, await s.dataSource.getRepository(Order).findOneByOrFail({ id: sold.order.id }), 'buyer asked', 'service');
      assert.deepEqual([first.status, second.status], [201, 200]);
      assert.deepEqual([await refundedCents(sold.charge.id), await booked(sold.charge.paymentRef)], [sold.charge.amountCents, 1]);

      const report = await reconcile(s.dataSource, 'sandbox');
      assert.deepEqual(report.differences.filter((d) => [failed.order.publicId, sold.order.publicId].includes(d.id)), []);
    });

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
      await steps(sold.id, ...TO_COMPLETED);
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

    it('reconcile holds the processor\'s record against the service\'s: a refund at the processor with no card_refund posting, and a posting with no refund there, are differences', async () => {
      const { sessionId } = await openSession();
      const sold = await paidOrder(sessionId);
      const payment = await s().dataSource.getRepository(CheckoutPayment).findOneByOrFail({ paymentRef: sold.externalPaymentRef });
      const about = async () => (await reconcile(s().dataSource, 'sandbox')).differences.filter((d) => d.id === payment.paymentRef).map((d) => d.field);
      assert.deepEqual(await about(), []);
      const book = () => s().dataSource.transaction((tx) => bookCardMoney(tx, 'card_refund', { partnerId: sold.partnerId, environment: 'sandbox', paymentRef: payment.paymentRef, amountCents: payment.amountCents, currency: payment.currency }));
      // Half of a refund each way, as a crash or a processor acting on its own would leave it.
      const other = await paidOrder((await openSession()).sessionId);
      const otherPayment = await s().dataSource.getRepository(CheckoutPayment).findOneByOrFail({ paymentRef: other.externalPaymentRef });
      await processor().refund(payment.paymentRef, payment.amountCents, `planted:${payment.id}`);
      await s().dataSource.transaction((tx) => bookCardMoney(tx, 'card_refund', { partnerId: other.partnerId, environment: 'sandbox', paymentRef: otherPayment.paymentRef, amountCents: otherPayment.amountCents, currency: otherPayment.currency }));
      assert.deepEqual(await about(), ['refund at the processor booked (card_refund)']);
      assert.deepEqual((await reconcile(s().dataSource, 'sandbox')).differences.filter((d) => d.id === otherPayment.paymentRef).map((d) => d.field), ['card_refund posting refunded at the processor']);
      // Each made whole: the posting booked, the refund made.
      await book();
      await processor().refund(otherPayment.paymentRef, otherPayment.amountCents, `planted:${otherPayment.id}`);
      assert.deepEqual(await about(), []);
      assert.deepEqual((await reconcile(s().dataSource, 'sandbox')).differences.filter((d) => d.id === otherPayment.paymentRef), []);
    });

    it('a failed transfer whose card refund fails (the processor down) still ends its step, never retried without end; the recovery sweep refunds the buyer later', async () => {
      const { sessionId } = await openSession();
      const order = await paidOrder(sessionId);
      const down = new ProcessorWith();
      down.refund = () => Promise.reject(new Error('the processor is down'));
      await advanceOrderThrough(order.id, ['DOMAIN_LOCKED', 'TRANSFER_FAILED'], { payments: { sandbox: down } });
      assert.equal((await s().dataSource.getRepository(Order).findOneByOrFail({ id: order.id })).status, 'TRANSFER_FAILED');
      assert.equal(await refundsBooked(order.externalPaymentRef), 0, 'not refunded yet');
      assert.ok((await sweep(processor())) >= 1);
      assert.equal(await refundsBooked(order.externalPaymentRef), 1);
      assert.deepEqual(await cardDifferences(order.publicId), []);
    });

    it('an operator\'s refund whose process dies after the reversal commits: the recovery sweep refunds the buyer\'s card within its next round, once', async () => {
      const { sessionId } = await openSession();
      const sold = await paidOrder(sessionId);
      await steps(sold.id, ...TO_COMPLETED);
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
