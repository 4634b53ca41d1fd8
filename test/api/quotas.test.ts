import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { admin } from '../helpers/admin';
import { brokerableName } from '../helpers/brokerage';
import { freshDomain, freshDomains, quote } from '../helpers/orders';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import type { EntityManager } from 'typeorm';
import { EventCounter } from '../../src/db/entities/partner-event';
import { checkCaseQuota } from '../../src/partners/quotas';

type Err = { error: { code: string; message: string } };

/** Partners cannot hoard inventory or create unbounded work (CONTRACT §15). */
describe('quotas: active quotes and open brokerage cases per partner and environment', function () {
  ownTemporal();
  this.timeout(60_000);

  const named = () => `quota-partner-${randomBytes(4).toString('hex')}`;

  it('admin partner quota shows the defaults (100 quotes, 100 cases in sandbox) and raises them for one partner', async () => {
    const name = named();
    await newPartner({ name });
    const shown = await admin('partner', 'quota', '--partner', name, '--env', 'sandbox', '--json');
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(JSON.parse(shown.stdout), { partner: name, environment: 'sandbox', active_quotes: 100, open_cases: 100 });
    const raised = await admin('partner', 'quota', '--partner', name, '--env', 'live', '--open-cases', '20000', '--json');
    assert.deepEqual(JSON.parse(raised.stdout), { partner: name, environment: 'live', active_quotes: 1000, open_cases: 20000 });
    assert.equal((await admin('partner', 'quota', '--partner', name, '--env', 'sandbox', '--active-quotes', '0', '--json')).code, 1, 'a quota of 0 is refused');
  });

  it('a partner at its quota of active quotes gets 429 quota_exceeded with Retry-After; racing requests never pass it; another partner is served; an expired quote frees a place', async () => {
    const name = named();
    const { client } = await newPartner({ name });
    assert.equal((await admin('partner', 'quota', '--partner', name, '--env', 'sandbox', '--active-quotes', '3', '--json')).code, 0);
    // Five quotes at once for a quota of three: exactly three pass (the partner's row lock).
    // Six different names (six separate picks at random may draw one twice: a refused quote's name then reads taken).
    const names = await freshDomains(6);
    const raced = await Promise.all(names.slice(0, 5).map((d) => quote(client, d.name)));
    assert.deepEqual(raced.map((r) => r.status).sort(), [201, 201, 201, 429, 429], raced.map((r) => r.text).join('\n'));
    const refused = raced.find((r) => r.status === 429)!;
    assert.equal((refused.body as unknown as Err).error.code, 'quota_exceeded');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 600, `Retry-After ${retryAfter}: until the oldest quote expires`);
    // Nothing left behind by a refusal: the names it asked for are still available.
    for (const r of raced.filter((x) => x.status === 429)) {
      const asked = names[raced.indexOf(r)].name;
      assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${asked}`)).body.available, true);
    }
    // Another partner is not held back.
    const other = await newPartner();
    assert.equal((await quote(other.client, names[5].name)).status, 201);
    // The quotes' 10 minutes pass (their workflows release them): places free up.
    await getStack().env.sleep('11 minutes');
    assert.equal((await quote(client, (await freshDomain()).name)).status, 201);
  });

  it('a partner at its quota of open brokerage cases gets 429 quota_exceeded with Retry-After: 3600', async () => {
    const name = named();
    const { client } = await newPartner({ name });
    assert.equal((await admin('partner', 'quota', '--partner', name, '--env', 'sandbox', '--open-cases', '1', '--json')).code, 0);
    const body = () => ({ domain: brokerableName('quota'), tier: 'managed', buyer_email: 'buyer@example.com', budget_cents: 500_000 });
    assert.equal((await client.post('/api/partner/v1/brokerage', body())).status, 201);
    const second = await client.post<Err>('/api/partner/v1/brokerage', body());
    assert.equal(second.status, 429, second.text);
    assert.equal(second.body.error.code, 'quota_exceeded');
    assert.equal(second.headers.get('retry-after'), '3600');
  });
  it("the partner's quota lock makes quota checks take turns, and never holds back a row that only references the partner (no deadlock with an order's event, then its ledger lines)", async () => {
    const s = getStack();
    const { partnerId } = await newPartner();
    const holder = s.dataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    try {
      await checkCaseQuota(holder.manager, s.config.quotas, partnerId, 'sandbox', true);
      // Postgres' own wait limit (raw SQL: a setting, not an entity): a write the lock held back fails here instead of waiting.
      // Each in a transaction rolled back after it.
      const within = async <T>(work: (tx: EntityManager) => Promise<T>) => {
        const other = s.dataSource.createQueryRunner();
        await other.connect();
        await other.startTransaction();
        try {
          await other.query(`SET LOCAL lock_timeout = '1s'`);
          return await work(other.manager);
        } finally {
          await other.rollbackTransaction();
          await other.release();
        }
      };
      // A row whose foreign key names the partner: Postgres checks it under a key-share lock of the partner's row.
      await within((tx) => tx.getRepository(EventCounter).insert({ partnerId, environment: 'live', lastSeq: '0' }));
      await assert.rejects(
        within((tx) => checkCaseQuota(tx, s.config.quotas, partnerId, 'sandbox', true)),
        (err: Error & { driverError?: { code?: string } }) => err.driverError?.code === '55P03',
        "a second quota check waits for the first (lock_not_available after the 1 s limit)",
      );
    } finally {
      await holder.rollbackTransaction();
      await holder.release();
    }
  });
});
