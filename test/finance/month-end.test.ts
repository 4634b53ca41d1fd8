import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { monthCloseWorkflow, payoutRunWorkflow } from '../../workflows/month-end';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { nextPeriodStart, periodStartOf } from '../../src/finance/periods';
import { freshDomain, order, quote } from '../helpers/orders';
import { completedSale, refundWindowPassed } from '../helpers/money';
import type { PartnerClient } from '../../src/client/partner-client';
import { recordHistory } from '../helpers/histories';
import { waitFor } from '../helpers/wait';
import { Settlement } from '../../src/db/entities/settlement';
import { closeEndedMonthsOf } from '../../src/finance/settlements';
import { CLOSE_GRACE_MS } from '../../workflows/messages';

type Settlements = { data: Array<{ period_start: string; status: string; gross_sold_cents: number; commission_retained_cents: number; amount_owed_to_service_cents: number }> };
type Transactions = { data: Array<{ order_id: string; occurred_at: string; gross_cents: number; commission_cents: number }> };

/**
 * The month end needs a clock of its own, as every Temporal test file has (ownTemporal): the
 * file's time-skipping server, worker and task queue, with the suite's API starting its
 * workflows there.
 */
describe('month end on the time-skipping server: settlements close at midnight UTC, then payouts', function () {
  ownTemporal();
  this.timeout(5 * 60_000);
  let env: TestWorkflowEnvironment;
  let taskQueue: string;
  let baseUrl: string;

  before(() => {
    const s = getStack();
    ({ env, taskQueue, baseUrl } = s);
  });

  async function skipTo(iso: string): Promise<void> {
    const gap = Date.parse(iso) - (await env.currentTimeMs());
    assert.ok(gap > 0, `the clock (${new Date(Date.parse(iso) - gap).toISOString()}) is already past ${iso}`);
    await env.sleep(gap);
  }

  /**
   * Waits for a workflow by polling, with the server's clock held: waiting on result() would let
   * the time-skipping server jump ahead while an activity runs (to the next timer it knows of).
   */
  async function completed<T>(workflowId: string): Promise<T> {
    // A plain client: the environment's own would let time skip while it reads the result.
    const handle = new Client({ connection: env.connection }).workflow.getHandle(workflowId);
    const status = async () => {
      try {
        return (await handle.describe()).status.name;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return 'not found';
        throw err;
      }
    };
    // Bounded by wall-clock time, not by a count of polls: under libfaketime everything runs slower.
    await waitFor(status, (s) => s === 'COMPLETED', 90_000, `${workflowId} completed`);
    return (await handle.result()) as T;
  }

  /**
   * What the month-end Schedule does at 00:05 UTC on the first (the time-skipping server runs no
   * Schedules): starts the close with no input, so it closes the months before the one it runs in.
   */
  async function scheduledClose(): Promise<{ workflowId: string; closed: number }> {
    const workflowId = `finance:month-close-${new Date(await env.currentTimeMs()).toISOString()}-${randomUUID().slice(0, 8)}`;
    await env.client.workflow.start(monthCloseWorkflow, { workflowId, taskQueue, args: [{}] });
    return { workflowId, ...(await completed<{ closed: number }>(workflowId)) };
  }

  /** A sale through the API, its fulfilment's polls moved along 5 seconds of workflow time at a step. */
  async function sell(client: PartnerClient): Promise<string> {
    const q = await quote(client, (await freshDomain()).name);
    assert.equal(q.status, 201, q.text);
    const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: `pay_${randomUUID()}`, sale_price_cents: q.body.price_cents });
    assert.equal(o.status, 201, o.text);
    // Each read while the transfer is pending moves the fulfilment's polls along 5 seconds of
    // workflow time. Bounded by wall-clock time, not by a count of polls: under libfaketime
    // everything runs slower.
    const status = async () => {
      const now = (await client.get<{ status: string }>(`/api/partner/v1/orders/${o.body.public_id}`)).body.status;
      if (now === 'TRANSFER_PENDING') await env.sleep(5_000);
      return now;
    };
    await waitFor(status, (s) => s === 'TRANSFER_COMPLETED', 90_000, `order ${o.body.public_id} completed`);
    return o.body.public_id;
  }

  it('books sales either side of midnight UTC into their own months; the close the Schedule starts on the first closes every earlier month left open (catch-up) and pays what is owed; the next month stays open until its own close', async () => {
    const { client, partnerId } = await newPartner({ baseUrl });
    // Every date comes from this server's clock: the month after the current one is the month
    // whose last minutes the sales straddle, so the test runs the same on any day of any year.
    const now = new Date(await env.currentTimeMs());
    const current = periodStartOf(now);
    const month = nextPeriodStart(current);
    const next = nextPeriodStart(month);
    const afterNext = nextPeriodStart(next);
    // 40 days before the first of this month is always in the month before the previous one.
    const unclosed = periodStartOf(new Date(Date.parse(`${current}T00:00:00Z`) - 40 * 24 * 3_600_000));
    const lastMinutes = (seconds: number) => new Date(Date.parse(`${next}T00:00:00Z`) - seconds * 1000).toISOString();
    // A month two back was never closed (the worker was down at its end), and a hosted-checkout
    // sale of that month, whose 30-day refund window has passed, owes the partner 5,000.
    await completedSale(partnerId, `${unclosed.slice(0, 8)}15T10:00:00Z`, { priceCents: 9_999 });
    await refundWindowPassed(await completedSale(partnerId, `${unclosed.slice(0, 8)}10T10:00:00Z`, { paymentModel: 'service_collected', priceCents: 50_000, commissionBps: 1000 }));

    // Two sales through the API, completed by their workflows on this server's clock.
    await skipTo(lastMinutes(120));
    const before = await sell(client);
    await skipTo(lastMinutes(15));
    const after = await sell(client);
    const txns = (await client.get<Transactions>('/api/partner/v1/transactions')).body.data;
    const sale = (id: string) => txns.find((t) => t.order_id === id)!;
    assert.ok(sale(before).occurred_at < `${next}T00:00:00Z`, `completed ${sale(before).occurred_at}`);
    assert.ok(sale(after).occurred_at >= `${next}T00:00:00Z`, `completed ${sale(after).occurred_at}`);

    // The close the Schedule starts after the month ended closes every earlier month still open.
    await skipTo(`${next}T00:05:00Z`);
    assert.ok((await scheduledClose()).closed >= 2);
    let settlements = (await client.get<Settlements>('/api/partner/v1/settlements')).body.data;
    assert.deepEqual(settlements.map((x) => [x.period_start, x.status]), [
      [next, 'open'],
      [month, 'closed'],
      [unclosed, 'closed'],
    ]);
    const closedMonth = settlements[1];
    assert.deepEqual([closedMonth.gross_sold_cents, closedMonth.commission_retained_cents], [sale(before).gross_cents, sale(before).commission_cents]);
    assert.equal(closedMonth.amount_owed_to_service_cents, closedMonth.gross_sold_cents - closedMonth.commission_retained_cents);
    assert.deepEqual([settlements[0].gross_sold_cents, settlements[0].commission_retained_cents], [sale(after).gross_cents, sale(after).commission_cents]);
    const payouts = (await client.get<{ data: Array<{ amount_cents: number; paid_at: string; breakdown: { service_collected_cents: number } }> }>('/api/partner/v1/payouts')).body.data;
    assert.deepEqual(payouts.map((p) => [p.amount_cents, p.breakdown.service_collected_cents]), [[5_000, 5_000]]);

    // The next month stays open until the close of the month after it.
    await skipTo(`${afterNext}T00:04:00Z`);
    assert.equal((await client.get<Settlements>('/api/partner/v1/settlements')).body.data[0].status, 'open');
    await skipTo(`${afterNext}T00:05:00Z`);
    const nextClose = await scheduledClose();
    assert.ok(nextClose.closed >= 1);
    settlements = (await client.get<Settlements>('/api/partner/v1/settlements')).body.data;
    assert.deepEqual(settlements.map((x) => [x.period_start, x.status]), [
      [next, 'closed'],
      [month, 'closed'],
      [unclosed, 'closed'],
    ]);
    assert.equal(settlements[0].gross_sold_cents, sale(after).gross_cents);
    await recordHistory(nextClose.workflowId, 'month-close-scheduled', { client: env.client });
    // An operator's payout run (what `admin payouts run` starts).
    const run = await env.client.workflow.start(payoutRunWorkflow, { workflowId: `finance:payouts:sandbox:${randomUUID()}`, taskQueue, args: [{ environment: 'sandbox' }] });
    assert.ok(Array.isArray((await completed<{ payouts: unknown[] }>(run.workflowId)).payouts));
    await recordHistory(run.workflowId, 'payout-run', { client: env.client });
  });
  it('GET /settlements closes an ended month only after the close\'s grace: a poll a minute after midnight leaves the month open for the last minute\'s bookings', async () => {
    const { partnerId } = await newPartner({ baseUrl });
    const s = getStack();
    // A month of this server's clock that has not begun yet, so no close has run over it.
    const month = nextPeriodStart(nextPeriodStart(periodStartOf(new Date(await env.currentTimeMs()))));
    const midnight = Date.parse(`${nextPeriodStart(month)}T00:00:00Z`);
    await completedSale(partnerId, new Date(midnight - 60_000).toISOString());
    const status = async () => (await s.dataSource.getRepository(Settlement).findOneByOrFail({ partnerId, periodStart: month })).status;
    assert.equal(await closeEndedMonthsOf(s.dataSource, partnerId, 'sandbox', new Date(midnight + 60_000)), 0, 'a poll one minute after midnight closes nothing');
    assert.equal(await status(), 'open');
    // A booking committed in those minutes (the sale of 23:59:30) still lands in its own month.
    await completedSale(partnerId, new Date(midnight - 30_000).toISOString());
    assert.equal(await closeEndedMonthsOf(s.dataSource, partnerId, 'sandbox', new Date(midnight + CLOSE_GRACE_MS + 1_000)), 1, 'once the grace has passed, the poll closes it');
    const closed = await s.dataSource.getRepository(Settlement).findOneByOrFail({ partnerId, periodStart: month });
    assert.deepEqual([closed.status, closed.grossSoldCents], ['closed', 200_000]);
  });
});
