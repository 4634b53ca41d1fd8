import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { appendEvent } from '../../src/events/outbox';
import { PartnerEvent } from '../../src/db/entities/partner-event';
import { WebhookDelivery } from '../../src/db/entities/webhook-delivery';
import { WebhookEndpoint } from '../../src/db/entities/webhook-endpoint';
import { Partner } from '../../src/db/entities/partner';
import { webhookSecretAad } from '../../src/webhooks/endpoints';
import { adminWith } from '../helpers/admin';
import { getStack, newPartner } from '../helpers/stack';

/** `admin webhooks list|deliveries` (CONTRACT §12): an endpoint's state and its recent deliveries. */
describe('admin webhooks list and deliveries', () => {
  // These commands need no Temporal (this file runs none).
  const admin = (...args: string[]) => adminWith({ TEMPORAL_ADDRESS: '127.0.0.1:1' }, ...args);

  it("shows a partner's endpoint, how far delivery got, and its deliveries newest first with their attempts and last error", async () => {
    const s = getStack();
    const { partnerId } = await newPartner();
    const { name } = await s.dataSource.getRepository(Partner).findOneByOrFail({ id: partnerId });
    await s.dataSource.getRepository(WebhookEndpoint).save({ partnerId, environment: 'sandbox', url: 'https://hooks.example.com/in', secretSealed: s.appDeps.secretBox.seal('whsec_x', webhookSecretAad(partnerId, 'sandbox')) });
    for (const n of [1, 2, 3]) {
      await s.dataSource.transaction((m) => appendEvent(m, { partnerId, environment: 'sandbox', type: 'order.created', data: { n }, dedupeKey: `admin-webhooks:${randomUUID()}` }));
    }
    const events = await s.dataSource.getRepository(PartnerEvent).find({ where: { partnerId }, order: { partnerSeq: 'ASC' } });
    const deliveries = s.dataSource.getRepository(WebhookDelivery);
    await deliveries.save({ eventId: events[0].id, partnerId, environment: 'sandbox', status: 'delivered', attempts: 1, finishedAt: new Date() });
    await deliveries.save({ eventId: events[1].id, partnerId, environment: 'sandbox', status: 'failed', attempts: 17, lastError: 'HTTP 500 from the endpoint', lastAttemptAt: new Date(), finishedAt: new Date() });
    await deliveries.save({ eventId: events[2].id, partnerId, environment: 'sandbox', status: 'pending', attempts: 2, lastError: 'timed out after 10 s', lastAttemptAt: new Date() });
    await s.dataSource.getRepository(WebhookEndpoint).update({ partnerId, environment: 'sandbox' }, { deliveredThroughSeq: events[1].partnerSeq });

    const list = await admin('webhooks', 'list', '--partner', name, '--env', 'sandbox', '--json');
    assert.equal(list.code, 0, list.stderr);
    const state = JSON.parse(list.stdout) as { url: string; enabled: boolean; delivered_through_seq: number; last_event_seq: number; deliveries: Record<string, number> };
    assert.equal(state.url, 'https://hooks.example.com/in');
    assert.equal(state.enabled, true);
    assert.equal(state.delivered_through_seq, Number(events[1].partnerSeq));
    assert.equal(state.last_event_seq, Number(events[2].partnerSeq));
    assert.deepEqual(state.deliveries, { pending: 1, delivered: 1, failed: 1 });

    const recent = JSON.parse((await admin('webhooks', 'deliveries', '--partner', name, '--env', 'sandbox', '--json')).stdout) as Array<{ event_id: string; event_type: string; status: string; attempts: number; last_error: string | null }>;
    assert.deepEqual(recent.map((d) => d.event_id), [events[2].id, events[1].id, events[0].id], 'newest first');
    assert.deepEqual(recent[1], { ...recent[1], event_type: 'order.created', status: 'failed', attempts: 17, last_error: 'HTTP 500 from the endpoint' });
    const failed = JSON.parse((await admin('webhooks', 'deliveries', '--partner', name, '--env', 'sandbox', '--status', 'failed', '--json')).stdout) as unknown[];
    assert.equal(failed.length, 1);

    const unknown = await admin('webhooks', 'list', '--partner', 'nobody-by-this-name', '--env', 'sandbox', '--json');
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /no partner named nobody-by-this-name/);
    const bad = await admin('webhooks', 'deliveries', '--partner', name, '--env', 'sandbox', '--limit', '0');
    assert.notEqual(bad.code, 0);
  });
});
