import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { signWebhook, verifyWebhook, webhookHeaders, WebhookVerificationError } from '../../src/client/webhooks';
import { WebhookEndpoint } from '../../src/db/entities/webhook-endpoint';
import { buy, fulfilmentResult } from '../helpers/orders';
import { startReceiver, type Received } from '../helpers/receiver';
import { waitFor } from '../helpers/wait';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';

type Endpoint = { url: string; enabled: boolean; updated_at: string; secret?: string };
const header = (r: Received, name: string) => String(r.headers[name] ?? '');

/**
 * Standard Webhooks (CONTRACT §7): a generated `whsec_` secret, deliveries that the
 * `standardwebhooks` package verifies beside the spec's X-Service-Signature, and a rotation in
 * which the previous secret keeps signing for 24 hours.
 */
describe('webhooks any Standard Webhooks library verifies', () => {
  ownTemporal();

  it('PUT without a secret generates a whsec_ secret and answers it once; deliveries verify with the standardwebhooks package and with the spec’s header', async () => {
    const receiver = await startReceiver();
    try {
      const { client, partnerId } = await newPartner({ scopes: ['webhook', 'buy', 'search'] });
      const put = await client.request<Endpoint>('PUT', '/api/partner/webhooks', { body: { url: receiver.url } });
      assert.equal(put.status, 200, put.text);
      const secret = put.body.secret!;
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'whsec_ and the base64 of 32 bytes');
      const stored = await getStack().dataSource.getRepository(WebhookEndpoint).findOneByOrFail({ partnerId, environment: 'sandbox' });
      assert.ok(!stored.secretSealed.toString('latin1').includes(secret.slice(6)), 'kept sealed only');
      // Registering again with the answered secret: no secret in the answer, nothing rotated.
      const again = await client.request<Endpoint>('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret } });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.secret, undefined, 'a given secret is never echoed');
      assert.equal((await getStack().dataSource.getRepository(WebhookEndpoint).findOneByOrFail({ partnerId, environment: 'sandbox' })).previousSecretSealed, null);

      const order = await buy(client);
      await fulfilmentResult(order.public_id);
      await waitFor(() => receiver.accepted.length, (n) => n >= 5, 30_000, 'five deliveries');
      const library = new Webhook(secret);
      for (const r of receiver.accepted) {
        const event = library.verify(r.body, r.headers as Record<string, string>) as { id: string };
        assert.equal(header(r, 'webhook-id'), event.id);
        assert.equal(header(r, 'webhook-timestamp'), header(r, 'x-service-timestamp'));
        assert.equal(header(r, 'webhook-signature').split(' ').length, 1, 'one secret signs');
        // The spec's header, keyed with the secret's whole text.
        assert.equal(header(r, 'x-service-signature'), signWebhook(secret, header(r, 'x-service-timestamp'), r.body));
        assert.equal(verifyWebhook(r.body, r.headers as Record<string, string>, secret).id, event.id);
      }
      const tampered = receiver.accepted[0]!;
      assert.throws(() => library.verify(tampered.body.replace('order.created', 'order.created '), tampered.headers as Record<string, string>));
    } finally {
      await receiver.close();
    }
  });

  it('a new secret leaves the previous one signing too (two v1, signatures) for 24 hours, then only the new one signs', async () => {
    const s = getStack();
    const receiver = await startReceiver();
    try {
      const { client, partnerId } = await newPartner({ scopes: ['webhook', 'buy', 'search'] });
      const old = (await client.request<Endpoint>('PUT', '/api/partner/webhooks', { body: { url: receiver.url } })).body.secret!;
      const fresh = `whsec_${Buffer.from('a-new-secret-of-32-bytes-for-it').toString('base64')}`;
      const rotated = await client.request<Endpoint>('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: fresh } });
      assert.equal(rotated.status, 200, rotated.text);
      const row = await s.dataSource.getRepository(WebhookEndpoint).findOneByOrFail({ partnerId, environment: 'sandbox' });
      const hours = (row.previousSecretUntil!.getTime() - Date.parse(rotated.body.updated_at)) / 3_600_000;
      assert.ok(Math.abs(hours - 24) < 0.01, `the previous secret signs for 24 hours (${hours})`);

      await fulfilmentResult((await buy(client)).public_id);
      await waitFor(() => receiver.accepted.length, (n) => n >= 5, 30_000, 'five deliveries');
      for (const r of receiver.accepted) {
        assert.equal(header(r, 'webhook-signature').split(' ').length, 2);
        new Webhook(fresh).verify(r.body, r.headers as Record<string, string>);
        new Webhook(old).verify(r.body, r.headers as Record<string, string>);
        assert.equal(header(r, 'x-service-signature'), signWebhook(fresh, header(r, 'x-service-timestamp'), r.body), 'the spec’s header is the new secret’s');
      }

      // 24 hours later (the window moved into the past): the old secret no longer verifies.
      await s.dataSource.getRepository(WebhookEndpoint).update({ partnerId, environment: 'sandbox' }, { previousSecretUntil: new Date(Date.now() - 1000) });
      const before = receiver.accepted.length;
      await fulfilmentResult((await buy(client)).public_id);
      await waitFor(() => receiver.accepted.length, (n) => n >= before + 5, 30_000, 'five more deliveries');
      for (const r of receiver.accepted.slice(before)) {
        assert.equal(header(r, 'webhook-signature').split(' ').length, 1);
        new Webhook(fresh).verify(r.body, r.headers as Record<string, string>);
        assert.throws(() => new Webhook(old).verify(r.body, r.headers as Record<string, string>));
      }
    } finally {
      await receiver.close();
    }
  });

  it('a switch from a whsec_ secret to a plain one leaves the whsec_ secret signing (Standard Webhooks) for the 24 hours; the SDK verifies with either of several secrets', async () => {
    const receiver = await startReceiver();
    try {
      const { client } = await newPartner({ scopes: ['webhook', 'buy', 'search'] });
      const old = (await client.request<Endpoint>('PUT', '/api/partner/webhooks', { body: { url: receiver.url } })).body.secret!;
      const plain = 'a-plain-secret-of-its-own';
      assert.equal((await client.request<Endpoint>('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: plain } })).status, 200);
      await fulfilmentResult((await buy(client)).public_id);
      await waitFor(() => receiver.accepted.length, (n) => n >= 5, 30_000, 'five deliveries');
      for (const r of receiver.accepted) {
        assert.equal(header(r, 'x-service-signature'), signWebhook(plain, header(r, 'x-service-timestamp'), r.body), 'the spec’s header is the new secret’s');
        assert.equal(header(r, 'webhook-signature').split(' ').length, 1, 'the old whsec_ secret alone signs the Standard Webhooks header');
        new Webhook(old).verify(r.body, r.headers as Record<string, string>);
        for (const secrets of [[plain], [old], [plain, old], [old, plain]]) {
          assert.equal(verifyWebhook(r.body, r.headers as Record<string, string>, secrets).id, header(r, 'x-service-event-id'), secrets.join(' '));
        }
      }
    } finally {
      await receiver.close();
    }

    // Plain to plain: one signature, so a receiver takes both secrets for the switch.
    const body = JSON.stringify({ id: 'evt_switch', type: 'order.created', created_at: '2026-01-01T00:00:00Z', data: {} });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers = webhookHeaders(['the-new-plain-secret', 'the-old-plain-secret'], 'evt_switch', timestamp, body);
    assert.equal(headers['webhook-signature'], undefined);
    assert.equal(verifyWebhook({ secret: ['the-new-plain-secret', 'the-old-plain-secret'], headers, body }).id, 'evt_switch');
    assert.equal(verifyWebhook({ secret: ['the-old-plain-secret', 'the-new-plain-secret'], headers, body }).id, 'evt_switch');
    assert.throws(() => verifyWebhook({ secret: ['the-old-plain-secret'], headers, body }), WebhookVerificationError);
    assert.throws(() => verifyWebhook({ secret: [], headers, body }), WebhookVerificationError);
  });

  it('a secret that is not whsec_ gets the spec’s header only; a malformed whsec_ secret is a validation_error; two first registrations racing make one endpoint', async () => {
    const receiver = await startReceiver();
    try {
      const { client, partnerId } = await newPartner({ scopes: ['webhook', 'buy', 'search'] });
      const bad = await client.request<{ error: { code: string; details: Array<{ field: string }> } }>('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: 'whsec_not base64!' } });
      assert.equal(bad.status, 400, bad.text);
      assert.equal(bad.body.error.code, 'validation_error');
      assert.equal(bad.body.error.details[0]!.field, 'body.secret');
      const short = await client.request('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: `whsec_${Buffer.alloc(16).toString('base64')}` } });
      assert.equal(short.status, 400, 'fewer than 24 bytes');

      const racing = await Promise.all([1, 2, 3].map(() => client.request<Endpoint>('PUT', '/api/partner/webhooks', { body: { url: receiver.url, secret: 'plain-secret-text' } })));
      assert.deepEqual(racing.map((r) => r.status), [200, 200, 200], racing.map((r) => r.text).join('\n'));
      assert.equal(await getStack().dataSource.getRepository(WebhookEndpoint).countBy({ partnerId }), 1);

      await fulfilmentResult((await buy(client)).public_id);
      await waitFor(() => receiver.accepted.length, (n) => n >= 5, 30_000, 'five deliveries');
      for (const r of receiver.accepted) {
        assert.equal(r.headers['webhook-signature'], undefined, 'no Standard Webhooks headers without a whsec_ secret');
        assert.equal(verifyWebhook(r.body, r.headers as Record<string, string>, 'plain-secret-text').id, header(r, 'x-service-event-id'));
      }
    } finally {
      await receiver.close();
    }
  });
});
