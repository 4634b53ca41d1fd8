import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { AdmissionBatcher, AdmissionUnavailable, type AdmissionRequest } from '../../src/auth/admission';
import { openDatabase } from '../../src/db/data-source';
import { RateLimitBucket } from '../../src/db/entities/admission';
import { getStack, newPartner } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const PATH = '/api/partner/v1/availability?domain=academy.com';

function request(keyId: string, overrides: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return { keyId, nonce: randomUUID(), scopeOk: true, ratePerSecond: 1000, burstMultiplier: 2, signedAt: String(Math.floor(Date.now() / 1000)), ...overrides };
}

describe('admission in batches: one statement per event-loop turn, the same decisions as one at a time', () => {
  it('requests admitted in the same turn go to Postgres as one statement, each decided as if alone', async () => {
    const { keyId } = await newPartner({ rateLimitPerSecond: 5 });
    const other = await newPartner({ rateLimitPerSecond: 1000 });
    const batcher = new AdmissionBatcher(getStack().dataSource, 1);
    const reused = randomUUID();
    const requests = [
      // Burst of 10 (5/s × 2): the first ten of this credential pass, the rest are limited.
      ...Array.from({ length: 14 }, () => request(keyId, { ratePerSecond: 5 })),
      // Interleaved: another credential, a nonce used twice in the batch, a request without the scope.
      request(other.keyId, { nonce: reused }),
      request(other.keyId, { nonce: reused }),
      request(other.keyId, { scopeOk: false }),
    ];
    const results = await Promise.all(requests.map((r) => batcher.admit(r)));
    assert.equal(batcher.sent.batches, 1, 'one statement for the whole turn');
    assert.deepEqual(
      results.slice(0, 14).map((r) => r.outcome),
      [...Array(10).fill('admitted'), ...Array(4).fill('rate_limited')],
    );
    assert.ok(results.slice(10, 14).every((r) => r.retryAfterSeconds >= 1));
    assert.deepEqual(results.slice(14).map((r) => r.outcome), ['admitted', 'replayed', 'forbidden']);
  });

  it('a request that breaks its batch statement fails alone; the others are decided again on their own', async () => {
    const { keyId } = await newPartner();
    const batcher = new AdmissionBatcher(getStack().dataSource, 1);
    const good = [request(keyId), request(keyId)];
    const answers = await Promise.allSettled([batcher.admit(good[0]), batcher.admit(request(keyId, { nonce: 'not-a-uuid' })), batcher.admit(good[1])]);
    assert.equal(answers[0].status === 'fulfilled' && answers[0].value.outcome, 'admitted');
    assert.equal(answers[1].status, 'rejected');
    assert.equal(answers[2].status === 'fulfilled' && answers[2].value.outcome, 'admitted');
    // Admitted once: the nonces are now replays.
    const again = await Promise.all(good.map((r) => batcher.admit(r)));
    assert.deepEqual(again.map((r) => r.outcome), ['replayed', 'replayed']);
  });

  it('concurrent batches sharing a key and a replayed nonce never deadlock: each nonce admitted once', async () => {
    const s = getStack();
    const { keyId } = await newPartner({ rateLimitPerSecond: 100_000 });
    const admit = (batcher: AdmissionBatcher, nonce: string) => batcher.admit(request(keyId, { nonce, ratePerSecond: 100_000 }));
    const a = new AdmissionBatcher(s.dataSource, 1);
    const b = new AdmissionBatcher(s.dataSource, 1);
    assert.equal((await admit(a, randomUUID())).outcome, 'admitted'); // the key's bucket row exists from here
    const deadlocks = async () =>
      Number(((await s.dataSource.query('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()')) as Array<{ deadlocks: string }>)[0].deadlocks);
    const before = await deadlocks();
    for (let round = 0; round < 10; round++) {
      const [n1, n2] = [randomUUID(), randomUUID()];
      // The bucket row held by another transaction while A = [K/n1, K/n2] and B = [K/n2] start, so
      // both are inside admission when it is released; without a lock order, B holding n2 while
      // waiting for the bucket and A holding the bucket while waiting for n2 would be a deadlock.
      const holder = s.dataSource.createQueryRunner();
      await holder.connect();
      await holder.startTransaction();
      await holder.manager.getRepository(RateLimitBucket).createQueryBuilder('b').setLock('pessimistic_write').where('b.key_id = :keyId', { keyId }).getOneOrFail();
      const pending = Promise.all([admit(a, n1), admit(a, n2), admit(b, n2)]);
      // Until both statements (A's batch and B's) wait for a lock inside admission.
      const waitingInAdmission = async () =>
        Number(((await s.dataSource.query("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%admit_requests(%'")) as Array<{ n: string }>)[0].n);
      await waitFor(waitingInAdmission, (n) => n >= 2, 10_000, 'both batches waiting for a lock inside admission');
      await holder.commitTransaction();
      await holder.release();
      const outcomes = (await pending).map((r) => r.outcome);
      assert.equal(outcomes[0], 'admitted');
      assert.deepEqual([outcomes[1], outcomes[2]].sort(), ['admitted', 'replayed'], `n2: ${outcomes}`);
    }
    assert.equal(await deadlocks(), before, 'Postgres detected no deadlock');
  });

  it('when the database cannot be reached, admission fails as unavailable (the API answers 503), nothing is re-sent', async () => {
    const dataSource = await openDatabase(getStack().databaseUrl, { poolSize: 1 });
    await dataSource.destroy();
    const batcher = new AdmissionBatcher(dataSource, 1);
    const answers = await Promise.allSettled([batcher.admit(request('pk_test_unreachable')), batcher.admit(request('pk_test_unreachable'))]);
    for (const answer of answers) assert.ok(answer.status === 'rejected' && answer.reason instanceof AdmissionUnavailable, String(answer.status === 'rejected' ? answer.reason : 'admitted'));
    assert.equal(batcher.sent.batches, 1, 'one statement tried; no request by request retry');
  });

  it('one batch decides exactly as the requests one at a time would (random batches: keys, limits, repeated nonces, scopes, revocation)', async () => {
    // The batched function next to the per-request one it replaced, on twin credentials. Limits
    // are slow (one token every 10 to 100 s, a 300 s window) so no token comes back during the test.
    const s = getStack();
    const rates = [0.01, 0.05, null, 0.1];
    const twins = await Promise.all(rates.map(async (rate) => [await newPartner({ rateLimitPerSecond: rate }), await newPartner({ rateLimitPerSecond: rate })]));
    for (const twin of twins[3]) await s.credentials.revoke(twin.keyId);
    const nonces = [...rates, null].map(() => Array.from({ length: 6 }, () => randomUUID()));
    const signedAt = String(Math.floor(Date.now() / 1000));
    let seed = 20261123;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), Math.floor((seed / 2 ** 31) * n));
    let decided = 0;
    const seen = new Set<string>();
    for (let round = 0; round < 8; round++) {
      const picks = Array.from({ length: 12 }, () => ({ key: random(rates.length + 1), nonce: random(6), scopeOk: random(10) > 0 }))
        // As the batcher sends them: one credential's requests together, in arrival order.
        .map((p, i) => ({ ...p, i }))
        .sort((a, b) => a.key - b.key || a.i - b.i);
      // A key id no credential has (index 4) is refused like a revoked one; each key has its own default rate, as each environment does.
      const keyIdOf = (key: number, side: 0 | 1) => (key < twins.length ? twins[key][side].keyId : `pk_test_unknown${side}`);
      const args = (side: 0 | 1) => [picks.map((p) => keyIdOf(p.key, side)), picks.map((p) => nonces[p.key][p.nonce]), picks.map((p) => p.scopeOk), picks.map((p) => [0.2, 0.2, 0.02, 0.2, 0.2][p.key]), 300, picks.map(() => signedAt)];
      const [k, n, scope, rate, burst, at] = args(0);
      const batched = (await s.dataSource.query('SELECT idx, outcome, retry_after_seconds FROM admit_requests($1, $2, $3, $4, $5, $6)', [k, n, scope, rate, burst, at])) as Array<{ idx: number; outcome: string; retry_after_seconds: number }>;
      const [k1, n1, scope1, rate1, , at1] = args(1) as [string[], string[], boolean[], number[], number, string[]];
      const oneByOne: Array<{ outcome: string; retry_after_seconds: number }> = [];
      for (let i = 0; i < picks.length; i++) {
        const [row] = (await s.dataSource.query('SELECT outcome, retry_after_seconds FROM admit_request($1, $2, $3, $4, $5, $6)', [k1[i], n1[i], scope1[i], rate1[i], 300, at1[i]])) as typeof oneByOne;
        oneByOne.push(row);
      }
      assert.deepEqual(batched.map((r) => r.idx), picks.map((_, i) => i + 1), 'one row per request, in order');
      assert.deepEqual(batched.map((r) => r.outcome), oneByOne.map((r) => r.outcome), `round ${round}: ${JSON.stringify(picks)}`);
      batched.forEach((r, i) => assert.ok(Math.abs(r.retry_after_seconds - oneByOne[i].retry_after_seconds) <= 1, `Retry-After ${r.retry_after_seconds} vs ${oneByOne[i].retry_after_seconds}`));
      decided += picks.length;
      batched.forEach((r) => seen.add(r.outcome));
    }
    assert.equal(decided, 96);
    assert.deepEqual([...seen].sort(), ['admitted', 'forbidden', 'rate_limited', 'replayed', 'revoked'], 'the walk (a fixed seed) met every outcome');
  });

  it('over HTTP: twenty simultaneous uses of one nonce admit exactly one', async () => {
    const { client } = await newPartner();
    const nonce = randomUUID();
    const results = await Promise.all(Array.from({ length: 20 }, () => client.get(PATH, { nonce })));
    assert.equal(results.filter((r) => r.status === 200).length, 1);
    assert.equal(results.filter((r) => r.status === 401).length, 19);
  });
});
