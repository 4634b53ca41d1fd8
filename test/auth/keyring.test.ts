import assert from 'node:assert/strict';
import { createCipheriv, randomBytes } from 'node:crypto';
import { decodeMasterKey } from '../../src/config';
import { SecretBox, singleKeyring } from '../../src/auth/secret-box';
import { CheckoutPageToken } from '../../src/checkout/page-token';
import { ProgressLinkToken } from '../../src/brokerage/progress-token';
import { Credential } from '../../src/db/entities/credential';
import { WebhookEndpoint } from '../../src/db/entities/webhook-endpoint';
import { registerEndpoint, webhookSecretAad } from '../../src/webhooks/endpoints';
import { PartnerClient } from '../../src/client/partner-client';
import { adminWith } from '../helpers/admin';
import { getStack, newPartner } from '../helpers/stack';

/** A value as SecretBox sealed it before the keyring: IV | tag | ciphertext, no version byte. */
function sealedBeforeKeyring(key: Buffer, plaintext: string, aad: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

describe('MASTER_KEY as a keyring: a version byte in every sealed value, and admin keys rotate (issue: safe for strangers, part 4)', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('MASTER_KEY is one key (version 1) or <version>:<key>,…; the highest seals, every version held opens', () => {
    assert.equal(decodeMasterKey(k1.toString('hex')).current, 1);
    const ring = decodeMasterKey(`1:${k1.toString('hex')},2:${k2.toString('base64')}`);
    assert.equal(ring.current, 2);
    assert.deepEqual(ring.keys.get(1), k1);
    for (const bad of [`0:${k1.toString('hex')}`, `256:${k1.toString('hex')}`, `1:${k1.toString('hex')},1:${k2.toString('hex')}`, '2:short', 'x:y']) {
      assert.throws(() => decodeMasterKey(bad), /MASTER_KEY/, bad);
    }

    const old = new SecretBox(singleKeyring(k1));
    const both = new SecretBox(ring);
    const onlyNew = new SecretBox({ current: 2, keys: new Map([[2, k2]]) });
    const v1 = old.seal('sk_test_secret', 'pk_test_a');
    assert.equal(v1[0], 1, 'the version byte');
    const v2 = both.seal('sk_test_secret', 'pk_test_a');
    assert.equal(v2[0], 2);
    assert.equal(both.open(v1, 'pk_test_a'), 'sk_test_secret');
    assert.equal(both.open(v2, 'pk_test_a'), 'sk_test_secret');
    assert.equal(both.isCurrent(v1, 'pk_test_a'), false);
    assert.equal(both.isCurrent(v2, 'pk_test_a'), true);
    assert.throws(() => onlyNew.open(v1, 'pk_test_a'), /version 1, which MASTER_KEY does not hold/);
    assert.throws(() => both.open(v2, 'pk_test_b'), /did not open under master key version 2/, 'bound to its row');
    assert.throws(() => old.open(v2, 'pk_test_a'), /version 2, which MASTER_KEY does not hold/);

    // Values sealed before versions (no byte) open under version 1, whatever their IV's first byte is.
    for (let i = 0; i < 40; i++) {
      const legacy = sealedBeforeKeyring(k1, `secret ${i}`, 'pk_test_a');
      assert.equal(both.open(legacy, 'pk_test_a'), `secret ${i}`);
      assert.equal(both.isCurrent(legacy, 'pk_test_a'), false);
    }
  });

  it('checkout and progress links signed before a rotation still verify; those of a removed version do not', () => {
    const old = new SecretBox(singleKeyring(k1));
    const both = new SecretBox({ current: 2, keys: new Map([[1, k1], [2, k2]]) });
    const onlyNew = new SecretBox({ current: 2, keys: new Map([[2, k2]]) });
    const expiry = new Date(Date.now() + 60_000);
    const pt = new CheckoutPageToken(old.deriveKeys('checkout-page-token')).sign('cs_0123456789abcdef01234567', expiry);
    assert.deepEqual(new CheckoutPageToken(both.deriveKeys('checkout-page-token')).verify(pt, Date.now()), { sessionId: 'cs_0123456789abcdef01234567' });
    assert.deepEqual(new CheckoutPageToken(onlyNew.deriveKeys('checkout-page-token')).verify(pt, Date.now()), { problem: 'bad_signature' });
    const link = new ProgressLinkToken(old.deriveKeys('brokerage-progress-token')).sign('brk_0123456789abcdef01234567', 1);
    assert.ok(new ProgressLinkToken(both.deriveKeys('brokerage-progress-token')).verify(link));
    const fresh = new ProgressLinkToken(both.deriveKeys('brokerage-progress-token')).sign('brk_0123456789abcdef01234567', 1);
    assert.notEqual(fresh, link, 'signed with the current version');
  });

  it('admin keys rotate seals every credential and webhook secret again under the new version; the keys keep working; a second run has nothing to do', async () => {
    const s = getStack();
    const { keyId, secret, partnerId } = await newPartner();
    await registerEndpoint(s.dataSource, s.appDeps.secretBox, { partnerId, environment: 'sandbox', url: 'https://hooks.example.com/partner', secret: 'whsec_dGVzdC1rZXlyaW5nLXNlY3JldC0yNGJ5' }, { allowLoopback: false }).catch(
      // The name does not resolve on a machine without DNS: the row is written directly then.
      async () => {
        await s.dataSource.getRepository(WebhookEndpoint).save({ partnerId, environment: 'sandbox', url: 'https://hooks.example.com/partner', secretSealed: s.appDeps.secretBox.seal('whsec_dGVzdC1rZXlyaW5nLXNlY3JldC0yNGJ5', webhookSecretAad(partnerId, 'sandbox')) });
      },
    );
    // keys rotate needs no Temporal (this file runs none).
    const ring = `2:${k2.toString('hex')},1:${s.masterKey.toString('hex')}`;
    const both = new SecretBox(decodeMasterKey(ring));
    const credentials = s.dataSource.getRepository(Credential);
    const endpoints = s.dataSource.getRepository(WebhookEndpoint);
    try {
      const first = await adminWith({ MASTER_KEY: ring, TEMPORAL_ADDRESS: '127.0.0.1:1' }, 'keys', 'rotate', '--json');
      assert.equal(first.code, 0, `${first.stderr} ${first.stdout}`);
      const report = JSON.parse(first.stdout) as { current_version: number; credentials: { resealed: number; already_current: number }; webhook_endpoints: { resealed: number } };
      assert.equal(report.current_version, 2);
      assert.ok(report.credentials.resealed >= 1 && report.webhook_endpoints.resealed >= 1, first.stdout);
      const row = await credentials.findOneByOrFail({ keyId });
      assert.equal(row.secretSealed[0], 2);
      assert.equal(both.open(row.secretSealed, keyId), secret);
      const endpoint = await endpoints.findOneByOrFail({ partnerId, environment: 'sandbox' });
      assert.equal(endpoint.secretSealed[0], 2);
      assert.equal(both.open(endpoint.secretSealed, webhookSecretAad(partnerId, 'sandbox')), 'whsec_dGVzdC1rZXlyaW5nLXNlY3JldC0yNGJ5');
      const again = JSON.parse((await adminWith({ MASTER_KEY: ring, TEMPORAL_ADDRESS: '127.0.0.1:1' }, 'keys', 'rotate', '--json')).stdout) as typeof report;
      assert.equal(again.credentials.resealed + again.webhook_endpoints.resealed, 0, 'nothing left to seal again');
      // Only version 1 (the suite's API process) no longer opens them: the clear error of a key missing from the ring.
      const refused = await new PartnerClient(s.baseUrl, { keyId, secret }).get('/api/partner/v1/pricing?domain=academy.com').catch((e: Error) => e);
      assert.ok(!(refused instanceof Error) && refused.status >= 500, 'the suite API holds only version 1');
    } finally {
      // The suite's API process holds only version 1: every secret goes back under it.
      const old = new SecretBox(s.masterKey);
      for (const c of await credentials.find()) await credentials.update({ id: c.id }, { secretSealed: old.seal(both.open(c.secretSealed, c.keyId), c.keyId) });
      for (const e of await endpoints.find()) {
        await endpoints.update({ partnerId: e.partnerId, environment: e.environment }, { secretSealed: old.seal(both.open(e.secretSealed, webhookSecretAad(e.partnerId, e.environment)), webhookSecretAad(e.partnerId, e.environment)) });
      }
    }
    assert.equal((await new PartnerClient(s.baseUrl, { keyId, secret }).get('/api/partner/v1/pricing?domain=academy.com')).status, 200);
  });
});
