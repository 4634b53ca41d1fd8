import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { createApp } from '../../src/api/app';
import { signWebhook, verifyWebhook, WebhookVerificationError } from '../../src/client/webhooks';
import { appendEvent } from '../../src/events/outbox';
import { lateDeliveries, markWoken, wakeDelivery } from '../../src/webhooks/notify';
import { WebhookEndpoint } from '../../src/db/entities/webhook-endpoint';
import { In } from 'typeorm';
import { webhookWorkflowId } from '../../workflows/messages';
import { getStack, listen, newPartner, suiteWorker, ownTemporal } from '../helpers/stack';
import { workflowStarters } from '../../src/temporal/starters';
import { buy, fulfilmentResult } from '../helpers/orders';
import { startReceiver } from '../helpers/receiver';
import { waitFor } from '../helpers/wait';
import { recordHistory } from '../helpers/histories';
import { createServiceWorkers } from '../../src/temporal/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { registerEndpoint } from '../../src/webhooks/endpoints';
import { SecretBox } from '../../src/auth/secret-box';
import { PartnerEvent } from '../../src/db/entities/partner-event';
import { WebhookDelivery } from '../../src/db/entities/webhook-delivery';

const SECRET = 'whsec_dGVzdC1kZWxpdmVyeS1zZWNyZXQtMjRi';
type Page = { data: Array<{ id: string; type: string }>; next_cursor: string };

async function historyIds(client: Awaited<ReturnType<typeof newPartner>>['client']): Promise<string[]> {
  return (await client.get<Page>('/api/partner/v1/events?limit=100')).body.data.map((e) => e.id);
}

describe('webhook delivery (a Temporal workflow per partner)', () => {
  ownTemporal();
  it('delivers every event, in history order, signed so that verifyWebhook accepts it', async () => {
    const receiver = await startReceiver();
    try {
      const { client } = await newPartner();
      assert.equal((await client.request('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: SECRET } })).status, 200);
      const o = await buy(client);
      await fulfilmentResult(o.public_id);
      const ids = await historyIds(client);
      assert.equal(ids.length, 5);
      await waitFor(() => receiver.accepted.length, (n) => n >= 5, 30_000, 'five deliveries');
      const events = receiver.accepted.map((r) => verifyWebhook<{ public_id: string }>(r.body, r.headers as Record<string, string>, SECRET));
      assert.deepEqual(events.map((e) => e.id), ids, 'the same events, in history order');
      assert.deepEqual(events.map((e) => e.type), ['order.created', 'transfer.domain_locked', 'transfer.initiated', 'transfer.pending', 'transfer.completed']);
      assert.equal(events[4].data.public_id, o.public_id);
      assert.equal(receiver.accepted[0].headers['content-type'], 'application/json');
    } finally {
      await receiver.close();
    }
  });

  it('an endpoint failing for two days, then recovering, receives every event once it is back', async () => {
    const s = getStack();
    const receiver = await startReceiver(() => 503);
    try {
      const { client } = await newPartner();
      await client.request('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: SECRET } });
      const o = await buy(client);
      await fulfilmentResult(o.public_id);
      await waitFor(() => receiver.received.length, (n) => n >= 1, 30_000, 'a first attempt');
      await s.env.sleep('2 days');
      const attemptsWhileDown = receiver.received.length;
      assert.ok(attemptsWhileDown > 5, `retried with back-off while down (${attemptsWhileDown} attempts)`);
      receiver.setAnswer(() => 200);
      await s.env.sleep('61 minutes');
      await waitFor(() => new Set(receiver.accepted.map((r) => r.headers['x-service-event-id'])).size, (delivered) => delivered >= 5, 30_000, 'all events after recovery');
      const delivered = [...new Set(receiver.accepted.map((r) => String(r.headers['x-service-event-id'])))];
      assert.deepEqual(delivered, await historyIds(client));
    } finally {
      await receiver.close();
    }
  });

  it('a delivery failing past 3 days is marked failed, and the event stays in /events', async () => {
    const s = getStack();
    const receiver = await startReceiver(() => 500);
    try {
      const { client, partnerId } = await newPartner();
      await client.request('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: SECRET } });
      const o = await buy(client);
      await fulfilmentResult(o.public_id);
      await waitFor(() => receiver.received.length, (n) => n >= 1, 30_000, 'a first attempt');
      await s.env.sleep('3 days');
      await s.env.sleep('2 hours');
      const [first] = await historyIds(client);
      await waitFor(async () => {
        const rows = (await s.dataSource.query(`SELECT status FROM webhook_deliveries WHERE event_id = $1`, [first])) as Array<{ status: string }>;
        return rows[0]?.status;
      }, (status) => status === 'failed', 30_000, 'the delivery marked failed');
      const [delivery] = (await s.dataSource.query('SELECT attempts, last_error FROM webhook_deliveries WHERE event_id = $1', [first])) as Array<{ attempts: number; last_error: string }>;
      assert.ok(delivery.attempts > 10, `${delivery.attempts} attempts`);
      assert.match(delivery.last_error, /500/);
      assert.ok((await historyIds(client)).includes(first), 'still in the history');
      const [endpoint] = (await s.dataSource.query('SELECT enabled FROM webhook_endpoints WHERE partner_id = $1', [partnerId])) as Array<{ enabled: boolean }>;
      assert.equal(endpoint.enabled, false, 'the endpoint is disabled until registered again');
      await recordHistory(webhookWorkflowId(partnerId, 'sandbox'), 'webhook-delivery-gave-up');
    } finally {
      await receiver.close();
    }
  });

  it('an endpoint disabled mid-batch: the rest of the batch is marked failed at once, not retried 3 days each', async () => {
    const s = getStack();
    const receiver = await startReceiver(() => 500);
    try {
      const { client, partnerId } = await newPartner();
      await client.request('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: SECRET } });
      // Five events committed together, so whichever run reads them (registering the endpoint
      // may already have started one) reads them as one batch.
      await s.dataSource.transaction(async (tx) => {
        for (let i = 0; i < 5; i++) await appendEvent(tx, { partnerId, environment: 'sandbox', type: 'order.created', data: { n: i }, dedupeKey: `mid-batch:${partnerId}:${i}` });
      });
      const ids = await historyIds(client);
      assert.equal(ids.length, 5);
      await wakeDelivery({ client: s.env.client, taskQueue: s.taskQueue }, partnerId, 'sandbox', true);
      await waitFor(() => receiver.received.length, (n) => n >= 1, 30_000, 'a first attempt');
      await s.env.sleep('3 days');
      await s.env.sleep('2 hours');
      await waitFor(
        async () => (await s.dataSource.getRepository(WebhookDelivery).find({ where: { partnerId } })).map((d) => d.status),
        (all) => all.length === 5 && all.every((status) => status === 'failed'),
        30_000,
        'every event of the batch failed within 3 days and 2 hours',
      );
      const rows = await s.dataSource.getRepository(WebhookDelivery).find({ where: { partnerId } });
      assert.equal(rows.filter((d) => /endpoint is disabled/.test(d.lastError ?? '')).length, 4, 'the four after the first: the endpoint was disabled');
      assert.equal(new Set(receiver.received.map((r) => r.headers['x-service-event-id'])).size, 1, 'only the first event was ever sent');
      const [endpoint] = (await s.dataSource.query('SELECT enabled, delivered_through_seq FROM webhook_endpoints WHERE partner_id = $1', [partnerId])) as Array<{ enabled: boolean; delivered_through_seq: string }>;
      assert.equal(endpoint.enabled, false);
      assert.equal(Number(endpoint.delivered_through_seq), 5, 'the position is past the batch');
      assert.deepEqual(await historyIds(client), ids, 'every event stays in /events');
    } finally {
      await receiver.close();
    }
  });

  it('late deliveries are woken in turn: the least recently woken first, then the oldest waiting event, so more than a round reaches every one', async () => {
    const s = getStack();
    const partners: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { partnerId } = await newPartner();
      await registerEndpoint(s.dataSource, new SecretBox(s.masterKey), { partnerId, environment: 'sandbox', url: 'http://127.0.0.1:9/hooks', secret: SECRET }, { allowLoopback: true });
      // An event no delivery was told of (a lost wake-up): the endpoint is late.
      await s.dataSource.transaction((tx) => appendEvent(tx, { partnerId, environment: 'sandbox', type: 'order.created', data: {}, dedupeKey: `late-turn:${partnerId}` }));
      // Waiting since long ago, the third longest of all.
      await s.dataSource.getRepository(PartnerEvent).update({ partnerId }, { createdAt: new Date(Date.UTC(2000, 0, 3 - i)) });
      partners.push(partnerId);
    }
    try {
      const first = (await lateDeliveries(s.dataSource, 2)).map((l) => l.partnerId);
      assert.deepEqual(first, [partners[2], partners[1]], 'the oldest waiting events first');
      for (const partnerId of first) await markWoken(s.dataSource, partnerId, 'sandbox');
      const next = (await lateDeliveries(s.dataSource, 1)).map((l) => l.partnerId);
      assert.deepEqual(next, [partners[0]], 'then the one not woken yet, though its event is newer');
      await markWoken(s.dataSource, partners[0], 'sandbox');
      const all = (await lateDeliveries(s.dataSource, 10_000)).map((l) => l.partnerId).filter((p) => partners.includes(p));
      assert.deepEqual(all, [partners[2], partners[1], partners[0]], 'each woken once, the least recently woken first');
    } finally {
      await s.dataSource.getRepository(WebhookEndpoint).update({ partnerId: In(partners) }, { enabled: false });
    }
  });

  it('a worker restarted mid-delivery loses no event', async () => {
    const s = getStack();
    const taskQueue = `webhooks-restart-${randomUUID()}`;
    const workflows = { client: s.env.client, taskQueue };
    const baseUrl = await listen(createApp({ ...s.appDeps, workflows }));
    const newWorker = () =>
      Worker.create({
        connection: s.env.nativeConnection,
        taskQueue,
        workflowBundle: s.workflowBundle,
        activities: createActivities({ dataSource: s.dataSource, masterKey: s.masterKey, allowLoopbackWebhooks: true, starters: workflowStarters(workflows, s.dataSource) }),
        maxCachedWorkflows: 0,
      });
    const receiver = await startReceiver(() => 502);
    try {
      const { client } = await newPartner({ baseUrl });
      await client.request('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: SECRET } });
      const first = await newWorker();
      let orderId = '';
      await first.runUntil(async () => {
        orderId = (await buy(client)).public_id;
        await waitFor(() => receiver.received.length, (n) => n >= 2, 30_000, 'attempts before the restart');
      });
      receiver.setAnswer(() => 200);
      const second = await newWorker();
      await second.runUntil(async () => {
        await fulfilmentResult(orderId);
        await s.env.sleep('61 minutes');
        const ids = await historyIds(client);
        await waitFor(() => receiver.accepted.map((r) => r.headers['x-service-event-id']), (delivered) => ids.every((id) => delivered.includes(id)), 30_000, 'every event delivered');
      });
    } finally {
      await receiver.close();
    }
  });

  it("an operator's cancel only stops delivery: the event is not marked failed and the endpoint stays enabled", async () => {
    const s = getStack();
    const taskQueue = `webhooks-cancel-${randomUUID()}`;
    const workflows = { client: s.env.client, taskQueue };
    const baseUrl = await listen(createApp({ ...s.appDeps, workflows }));
    const worker = await suiteWorker(taskQueue, { workflows });
    const receiver = await startReceiver(() => 500);
    try {
      const { client, partnerId } = await newPartner({ baseUrl });
      await client.request('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: SECRET } });
      const handle = s.env.client.workflow.getHandle(webhookWorkflowId(partnerId, 'sandbox'));
      await worker.runUntil(async () => {
        await s.dataSource.transaction((tx) => appendEvent(tx, { partnerId, environment: 'sandbox', type: 'order.created', data: {}, dedupeKey: `cancel-test:${partnerId}` }));
        await wakeDelivery(workflows, partnerId, 'sandbox', true);
        await waitFor(() => receiver.received.length, (n) => n >= 1, 30_000, 'a first attempt');
        await s.env.sleep('1 hour');
        assert.ok(receiver.received.length >= 3, `retrying (${receiver.received.length} attempts)`);
        await handle.cancel();
        await assert.rejects(handle.result(), (err) => err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure);
      });
      assert.equal((await handle.describe()).status.name, 'CANCELLED');
      const [eventId] = await historyIds(client);
      const deliveries = (await s.dataSource.query('SELECT status, last_error FROM webhook_deliveries WHERE event_id = $1', [eventId])) as Array<{ status: string; last_error: string }>;
      assert.deepEqual(deliveries.map((d) => d.status), ['pending'], 'not marked failed');
      assert.doesNotMatch(deliveries[0].last_error, /gave up/);
      const [endpoint] = (await s.dataSource.query('SELECT enabled FROM webhook_endpoints WHERE partner_id = $1', [partnerId])) as Array<{ enabled: boolean }>;
      assert.equal(endpoint.enabled, true, 'the endpoint stays enabled');
      await recordHistory(handle.workflowId, 'webhook-delivery-cancelled');
    } finally {
      await receiver.close();
    }
  });

  it('verifyWebhook rejects a tampered body, a wrong secret and a stale timestamp', () => {
    const body = JSON.stringify({ id: 'evt_1', type: 'order.created', created_at: '2026-11-21T10:00:00Z', data: {} });
    const ts = String(Math.floor(Date.now() / 1000));
    const headers = { 'x-service-event-id': 'evt_1', 'x-service-timestamp': ts, 'x-service-signature': signWebhook(SECRET, ts, body) };
    assert.equal(verifyWebhook(body, headers, SECRET).id, 'evt_1');
    assert.throws(() => verifyWebhook(body.replace('order', 'orders'), headers, SECRET), WebhookVerificationError);
    assert.throws(() => verifyWebhook(body, headers, 'whsec_other_secret_value'), WebhookVerificationError);
    const old = String(Number(ts) - 301);
    assert.throws(() => verifyWebhook(body, { ...headers, 'x-service-timestamp': old, 'x-service-signature': signWebhook(SECRET, old, body) }, SECRET), /tolerance/);
  });

  it('deliveries run on their own task queue and worker: while a partner endpoint hangs, orders on the service queue complete', async function () {
    this.timeout(2 * 60_000);
    const s = getStack();
    const taskQueue = `service-${randomUUID()}`;
    const webhookTaskQueue = `${taskQueue}-webhooks`;
    const workflows = { client: s.env.client, taskQueue, webhookTaskQueue };
    const workers = await createServiceWorkers({
      connection: s.env.nativeConnection,
      namespace: 'default',
      taskQueue,
      webhookTaskQueue,
      dataSource: s.dataSource,
      client: s.env.client,
      masterKey: s.masterKey,
      allowLoopbackWebhooks: true,
      workflowBundle: s.workflowBundle,
    });
    const running = workers.run();
    let release = false;
    const receiver = await startReceiver(() => (release ? 200 : 'hang'));
    try {
      const baseUrl = await listen(createApp({ ...s.appDeps, workflows }));
      const { client, partnerId } = await newPartner({ baseUrl });
      await client.request('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: SECRET } });
      const o = await buy(client);
      await waitFor(() => receiver.received.length, (n) => n >= 1, 30_000, 'a delivery hanging');
      const delivery = s.env.client.workflow.getHandle(webhookWorkflowId(partnerId, 'sandbox'));
      assert.equal((await delivery.describe()).taskQueue, webhookTaskQueue);
      const order = s.env.client.workflow.getHandle(`order:${o.public_id}`);
      assert.equal((await order.describe()).taskQueue, taskQueue);
      assert.deepEqual(await order.result(), { status: 'TRANSFER_COMPLETED' });
      // The endpoint recovers: what hangs is answered now, rather than cut at its 10 s.
      release = true;
      receiver.answerHung(200);
      const ids = await historyIds(client);
      await waitFor(() => receiver.accepted.map((r) => r.headers['x-service-event-id']), (delivered) => ids.every((id) => delivered.includes(id)), 60_000, 'every event delivered once the endpoint answers');
      await delivery.cancel();
      await delivery.result().catch(() => undefined);
    } finally {
      workers.shutdown();
      await running;
      await receiver.close();
    }
  });

  it('a delivery attempt honours cancellation: a hanging request is cut and the activity ends cancelled, the event still pending (not failed)', async () => {
    const s = getStack();
    const receiver = await startReceiver(() => 'hang');
    try {
      const { partnerId } = await newPartner();
      await registerEndpoint(s.dataSource, new SecretBox(s.masterKey), { partnerId, environment: 'sandbox', url: receiver.url, secret: SECRET }, { allowLoopback: true });
      await s.dataSource.transaction((tx) => appendEvent(tx, { partnerId, environment: 'sandbox', type: 'order.created', data: {}, dedupeKey: `cancel-attempt:${partnerId}` }));
      const [{ id: eventId }] = await s.dataSource.getRepository(PartnerEvent).find({ where: { partnerId }, select: { id: true } });
      const activities = createActivities({ dataSource: s.dataSource, masterKey: s.masterKey, allowLoopbackWebhooks: true });
      const env = new MockActivityEnvironment();
      // It heartbeats while the request is out: a cancellation from the server reaches it only so.
      const beats: number[] = [];
      env.on('heartbeat', () => beats.push(Date.now()));
      const attempt = env.run(activities.deliverEvent, { partnerId, environment: 'sandbox' as const, eventId });
      await waitFor(() => receiver.received.length, (n) => n >= 1, 10_000, 'the request under way');
      await waitFor(() => beats.length, (n) => n >= 2, 5_000, 'heartbeats while the request hangs');
      env.cancel();
      await assert.rejects(attempt, (err) => err instanceof CancelledFailure);
      const [delivery] = await s.dataSource.getRepository(WebhookDelivery).find({ where: { eventId } });
      assert.equal(delivery.status, 'pending');
      assert.match(delivery.lastError ?? '', /abort/i);
    } finally {
      await receiver.close();
    }
  });
});
