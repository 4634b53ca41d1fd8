import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { importInventory, parseInventoryCsv } from '../../src/discovery/inventory';
import type { PartnerClient } from '../../src/client/partner-client';
import { orderWorkflowId, transferOutcomeUpdate } from '../../workflows/messages';
import { OPERATOR_REMINDERS } from '../../workflows/order-fulfilment';
import { BusinessStatus } from '../../workflows/search-attributes';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { count, freshDomain, fulfilmentResult, order, quote, type OrderBody } from '../helpers/orders';
import { recordHistory } from '../helpers/histories';
import { admin } from '../helpers/admin';
import { waitFor } from '../helpers/wait';



let names = 0;
/** A name listed in the live inventory for this test alone. */
async function liveName(): Promise<string> {
  const name = `liveop${process.pid}x${++names}${randomBytes(3).toString('hex')}.com`;
  await importInventory(getStack().dataSource, 'live', parseInventoryCsv(`name,tld,category,buy_now_price_cents,floor_price_cents,currency,status,active_site,registered_year\n${name},com,business,250000,150000,USD,listed,false,2015\n`));
  return name;
}

async function liveOrder(client: PartnerClient, externalPaymentRef: string): Promise<OrderBody> {
  const q = await quote(client, await liveName());
  assert.equal(q.status, 201, q.text);
  const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: externalPaymentRef, sale_price_cents: q.body.price_cents });
  assert.equal(o.status, 201, o.text);
  return o.body;
}

/** How long a workflow's step may take to show: its activities run in real time. */
const STEP_MS = 10_000;

async function awaitingOperator(client: PartnerClient, publicId: string): Promise<void> {
  const handle = getStack().env.client.workflow.getHandle(orderWorkflowId(publicId));
  const read = async () => {
    const status = (await client.get<OrderBody>(`/api/partner/v1/orders/${publicId}`)).body.status;
    return { status, business: status === 'TRANSFER_PENDING' ? (await handle.describe()).typedSearchAttributes.get(BusinessStatus) : undefined };
  };
  await waitFor(read, (o) => o.status === 'TRANSFER_PENDING' && o.business === 'AWAITING_OPERATOR', STEP_MS, `order ${publicId} showing AWAITING_OPERATOR`);
}

describe('live transfers: without a registrar adapter, operators record each outcome (CONTRACT §6, §12)', () => {
  ownTemporal();
  it('a live order is never completed by simulation (sandbox inputs do nothing): it waits for an operator, reminds them, and the admin command completes it', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner({ environment: 'live' });
    const o = await liveOrder(client, 'pay_fail_transfer_live');
    await awaitingOperator(client, o.public_id);

    // Two hours pass with nobody acting: the workflow reminds operators and still waits.
    await s.env.sleep('2 hours');
    const handle = s.env.client.workflow.getHandle(orderWorkflowId(o.public_id));
    const remindersScheduled = async () => ((await handle.fetchHistory()).events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'remindOperators').length;
    const reminders = await waitFor(remindersScheduled, (n) => n >= 1, STEP_MS, 'a reminder of the operators scheduled');
    assert.ok(reminders >= 1, 'operators were reminded');
    assert.equal((await client.get<OrderBody>(`/api/partner/v1/orders/${o.public_id}`)).body.status, 'TRANSFER_PENDING');
    assert.equal(await count('SELECT 1 FROM transactions WHERE partner_id = $1', [partnerId]), 0);

    const done = await admin('order', 'transfer-completed', o.public_id, '--json');
    assert.equal(done.code, 0, done.stderr);
    const view = JSON.parse(done.stdout) as OrderBody;
    assert.equal(view.status, 'TRANSFER_COMPLETED');
    assert.equal(view.timeline.at(-1)?.status, 'TRANSFER_COMPLETED');
    assert.deepEqual(await fulfilmentResult(o.public_id), { status: 'TRANSFER_COMPLETED' });
    assert.equal(await count('SELECT 1 FROM transactions WHERE partner_id = $1', [partnerId]), 1);

    const again = await admin('order', 'transfer-failed', o.public_id, '--json');
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /not waiting for an operator/);
    await recordHistory(orderWorkflowId(o.public_id), 'order-operator-completed');
    assert.equal((await client.get<OrderBody>(`/api/partner/v1/orders/${o.public_id}`)).body.status, 'TRANSFER_COMPLETED');
  });

  it('reminders stop after two weeks (the order still waits, its history no longer grows); the operator can still decide', async () => {
    const s = getStack();
    const { client } = await newPartner({ environment: 'live' });
    const o = await liveOrder(client, 'pay_live_reminders_end');
    await awaitingOperator(client, o.public_id);
    const handle = s.env.client.workflow.getHandle(orderWorkflowId(o.public_id));
    const remindersScheduled = async () => ((await handle.fetchHistory()).events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'remindOperators').length;
    await s.env.sleep('20 days');
    const reminders = await waitFor(remindersScheduled, (n) => n >= OPERATOR_REMINDERS, STEP_MS, 'two weeks of reminders');
    assert.equal(reminders, OPERATOR_REMINDERS);
    const length = (await handle.fetchHistory()).events?.length ?? 0;
    await s.env.sleep('30 days');
    assert.equal(await remindersScheduled(), OPERATOR_REMINDERS, 'no reminder after the last');
    assert.equal((await handle.fetchHistory()).events?.length, length, 'a month more adds nothing to the history');
    assert.equal((await client.get<OrderBody>(`/api/partner/v1/orders/${o.public_id}`)).body.status, 'TRANSFER_PENDING');
    const done = await admin('order', 'transfer-completed', o.public_id, '--json');
    assert.equal(done.code, 0, done.stderr);
    assert.deepEqual(await fulfilmentResult(o.public_id), { status: 'TRANSFER_COMPLETED' });
    await recordHistory(orderWorkflowId(o.public_id), 'order-operator-reminders-ended');
  });

  it('the admin command records a failed live transfer with its reason; the name goes back on sale', async () => {
    const { client } = await newPartner({ environment: 'live' });
    const o = await liveOrder(client, 'pay_live_cli_failed');
    await awaitingOperator(client, o.public_id);
    const res = await admin('order', 'transfer-failed', o.public_id, '--reason', 'the losing registrar refused the transfer', '--json');
    assert.equal(res.code, 0, res.stderr);
    const view = JSON.parse(res.stdout) as OrderBody;
    assert.equal(view.status, 'TRANSFER_FAILED');
    assert.equal(view.failure_reason, 'the losing registrar refused the transfer');
    assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${o.domain}`)).body.available, true);
  });

  it('the same Update sent from the Temporal UI (any client) completes or fails the transfer', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner({ environment: 'live' });
    const completed = await liveOrder(client, 'pay_live_update_ok');
    const failed = await liveOrder(client, 'pay_live_update_ko');
    await awaitingOperator(client, completed.public_id);
    await awaitingOperator(client, failed.public_id);
    const ok = await s.env.client.workflow.getHandle(orderWorkflowId(completed.public_id)).executeUpdate(transferOutcomeUpdate, { args: [{ outcome: 'completed', reason: null }] });
    assert.deepEqual(ok, { status: 'TRANSFER_COMPLETED' });
    const ko = await s.env.client.workflow.getHandle(orderWorkflowId(failed.public_id)).executeUpdate(transferOutcomeUpdate, { args: [{ outcome: 'failed', reason: 'registry timeout' }] });
    assert.deepEqual(ko, { status: 'TRANSFER_FAILED', reason: 'registry timeout' });
    assert.equal(await count('SELECT 1 FROM transactions WHERE partner_id = $1', [partnerId]), 1);
    assert.equal((await client.get<OrderBody>(`/api/partner/v1/orders/${failed.public_id}`)).body.failure_reason, 'registry timeout');
  });

  it('the operator Update is refused for an order that does not wait for one (a sandbox order), and nothing changes', async () => {
    const { client } = await newPartner();
    const q = await quote(client, (await freshDomain()).name);
    const o = (await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_stall_transfer_op', sale_price_cents: q.body.price_cents })).body;
    const res = await admin('order', 'transfer-completed', o.public_id, '--json');
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /not waiting for an operator: its transfer runs through a registrar/);
    assert.notEqual((await client.get<OrderBody>(`/api/partner/v1/orders/${o.public_id}`)).body.status, 'TRANSFER_COMPLETED');
    // Ended by its partner's refund (terminating a workflow would stop the test server's time skipping).
    assert.equal((await client.post('/api/partner/v1/refunds', { order_id: o.public_id })).status, 201);
  });

  it('a refund of a live order waiting for an operator is decided by the operator: transfer-failed (the transfer stopped) grants it', async () => {
    const s = getStack();
    const { client } = await newPartner({ environment: 'live' });
    const o = await liveOrder(client, 'pay_live_refund');
    await awaitingOperator(client, o.public_id);
    const refund = client.post<{ status: string; refund_id: string }>('/api/partner/v1/refunds', { order_id: o.public_id, reason: 'buyer cancelled' });
    const handle = s.env.client.workflow.getHandle(orderWorkflowId(o.public_id));
    await waitFor(() => handle.query<{ refund: unknown }>('state'), (state) => Boolean(state.refund), STEP_MS, 'the refund asked');
    await handle.executeUpdate(transferOutcomeUpdate, { args: [{ outcome: 'failed', reason: 'stopped at the buyer\'s request' }] });
    const res = await refund;
    assert.equal(res.status, 201);
    assert.equal(res.body.status, 'succeeded');
    assert.equal((await client.get<OrderBody>(`/api/partner/v1/orders/${o.public_id}`)).body.status, 'REFUNDED');
    assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${o.domain}`)).body.available, true);
    await recordHistory(orderWorkflowId(o.public_id), 'order-operator-refund');
  });
});
