import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createApp } from '../../src/api/app';
import { CredentialService } from '../../src/auth/credentials';
import { SecretBox } from '../../src/auth/secret-box';
import { openDatabase } from '../../src/db/data-source';
import { PartnerClient } from '../../src/client/partner-client';
import { getStack, listen, newPartner } from '../helpers/stack';

const PATH = '/api/partner/v1/availability?domain=academy.com';

describe('rate limits per credential (CONTRACT §2)', () => {
  it('over the limit is 429 rate_limited with Retry-After in whole seconds', async () => {
    // 1 request per second with a burst of 2: the third immediate request is over.
    const { client } = await newPartner({ rateLimitPerSecond: 1 });
    const statuses: number[] = [];
    let limited;
    for (let i = 0; i < 4; i++) {
      const res = await client.get(PATH);
      statuses.push(res.status);
      if (res.status === 429) limited = res;
    }
    assert.deepEqual(statuses.slice(0, 2), [200, 200]);
    assert.ok(limited, `expected a 429 in ${statuses}`);
    assert.equal((limited.body as { error: { code: string } }).error.code, 'rate_limited');
    assert.match(limited.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    assert.ok(limited.headers.get('x-request-id'));
  });

  it('every signed answer carries RateLimit-Policy and RateLimit (IETF draft): the policy, what is left, when the bucket is full again', async () => {
    // 10 a second with a burst of 20 (the multiplier 2 of configuration): q=20 per w=2 s.
    const { client } = await newPartner({ rateLimitPerSecond: 10 });
    const answers = [];
    for (let i = 0; i < 25; i++) answers.push(await client.get(PATH));
    const admitted = answers.filter((r) => r.status === 200);
    for (const res of answers) assert.equal(res.headers.get('ratelimit-policy'), '"credential";q=20;w=2', `${res.status}`);
    const fields = answers.map((r) => /^"credential";r=(\d+);t=(\d+)$/.exec(r.headers.get('ratelimit') ?? ''));
    assert.ok(fields.every(Boolean), answers.map((r) => r.headers.get('ratelimit')).join(', '));
    const left = fields.map((m) => Number(m![1]));
    assert.ok(left[0]! >= 18 && left[0]! <= 19, `the first leaves 19 (or 18 with a tick of refill rounding): ${left[0]}`);
    // What is left falls as requests are admitted (a little refill may come back meanwhile), to 0 at the 429s.
    assert.ok(left[admitted.length - 1]! < left[0]!, left.join(','));
    const limited = answers.filter((r) => r.status === 429);
    assert.ok(limited.length >= 1, `a burst of 25 meets the limit: ${answers.map((r) => r.status)}`);
    for (const res of limited) {
      assert.match(res.headers.get('ratelimit') ?? '', /^"credential";r=0;t=[1-9]\d*$/);
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
    }
    // An error after admission (an unlisted name) carries them too.
    const missing = await client.get('/api/partner/v1/pricing?domain=not-listed-anywhere-xyz.com');
    if (missing.status === 404) assert.match(missing.headers.get('ratelimit') ?? '', /^"credential";r=\d+;t=\d+$/);
  });

  it('a rate-limited request changes nothing: its nonce can be used once the limit allows', async () => {
    const { client } = await newPartner({ rateLimitPerSecond: 1 });
    await client.get(PATH);
    await client.get(PATH);
    const nonce = randomUUID();
    const limited = await client.get(PATH, { nonce });
    assert.equal(limited.status, 429);
    // Waits out the Retry-After the refusal gave (and a tenth more): the same nonce is then admitted.
    const retryAfterMs = 1100 * Number(limited.headers.get('retry-after'));
    await new Promise((r) => setTimeout(r, retryAfterMs));
    assert.equal((await client.get(PATH, { nonce })).status, 200);
  });

  it('the limit holds across API processes that share the database', async () => {
    const s = getStack();
    // A second API with its own connection pool and credential cache, as another process has.
    const otherDataSource = await openDatabase(s.databaseUrl, { poolSize: 4 });
    try {
      const other = createApp({ ...s.appDeps, dataSource: otherDataSource, credentials: new CredentialService(otherDataSource, new SecretBox(s.masterKey), 0) });
      const otherUrl = await listen(other);
      const { keyId, secret } = await newPartner({ rateLimitPerSecond: 2 });
      const a = new PartnerClient(s.baseUrl, { keyId, secret });
      const b = new PartnerClient(otherUrl, { keyId, secret });
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).get(PATH)));
      const ok = results.filter((r) => r.status === 200).length;
      // Burst capacity is 4 (2/s × 2), plus at most a token or two refilled while the requests run.
      assert.ok(ok >= 4 && ok <= 6, `admitted ${ok} of 12`);
      assert.equal(results.filter((r) => r.status === 429).length, 12 - ok);
    } finally {
      await otherDataSource.destroy();
    }
  });

  it('a nonce used on one API process is a replay on another', async () => {
    const s = getStack();
    const otherDataSource = await openDatabase(s.databaseUrl, { poolSize: 2 });
    try {
      const otherUrl = await listen(createApp({ ...s.appDeps, dataSource: otherDataSource, credentials: new CredentialService(otherDataSource, new SecretBox(s.masterKey), 0) }));
      const { keyId, secret } = await newPartner();
      const nonce = randomUUID();
      assert.equal((await new PartnerClient(s.baseUrl, { keyId, secret }).get(PATH, { nonce })).status, 200);
      const replay = await new PartnerClient(otherUrl, { keyId, secret }).get(PATH, { nonce });
      assert.equal(replay.status, 401);
      assert.equal((replay.body as { error: { code: string } }).error.code, 'invalid_signature');
    } finally {
      await otherDataSource.destroy();
    }
  });

  it('without an operator override, the environment default from configuration applies', async () => {
    const s = getStack();
    const baseUrl = await listen(
      createApp({ ...s.appDeps, config: { ...s.appDeps.config, rateLimits: { perSecond: { sandbox: 1, live: 100 }, burstMultiplier: 2 } } }),
    );
    const { client } = await newPartner({ rateLimitPerSecond: null, baseUrl });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await client.get(PATH)).status);
    assert.deepEqual(statuses, [200, 200, 429]);
  });
});
