import assert from 'node:assert/strict';
import { PartnerClient } from '../../src/client/partner-client';
import { appendEvent } from '../../src/events/outbox';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { buy, fulfilmentResult } from '../helpers/orders';

type Page = { data: Array<{ id: string; type: string; created_at: string; data: { public_id?: string } }>; next_cursor: string };

describe('event history (GET /api/partner/v1/events)', () => {
  ownTemporal();
  it("replays the partner's own events oldest first; next_cursor is never null and an empty page gives it back", async () => {
    const { client } = await newPartner();
    const other = await newPartner();
    const o = await buy(client);
    await fulfilmentResult(o.public_id);
    const theirs = await buy(other.client);
    await fulfilmentResult(theirs.public_id);

    const first = await client.get<Page>('/api/partner/v1/events?limit=2');
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.data.map((e) => e.type), ['order.created', 'transfer.domain_locked']);
    assert.match(first.body.data[0].id, /^evt_/);
    assert.equal(first.body.data[0].data.public_id, o.public_id);
    const rest = await client.get<Page>(`/api/partner/v1/events?cursor=${first.body.next_cursor}`);
    assert.deepEqual(rest.body.data.map((e) => e.type), ['transfer.initiated', 'transfer.pending', 'transfer.completed']);
    const caughtUp = await client.get<Page>(`/api/partner/v1/events?cursor=${rest.body.next_cursor}`);
    assert.deepEqual(caughtUp.body.data, []);
    assert.equal(caughtUp.body.next_cursor, rest.body.next_cursor);
    const all = [...first.body.data, ...rest.body.data];
    assert.ok(all.every((e) => e.data.public_id === o.public_id), "only the partner's own events");
    const times = all.map((e) => Date.parse(e.created_at));
    assert.deepEqual(times, [...times].sort((a, b) => a - b));
    assert.equal((await client.get('/api/partner/v1/events?cursor=nonsense')).status, 400);
    assert.equal((await client.get('/api/partner/v1/events?limit=500')).status, 400);
  });

  it('a live credential sees none of the sandbox events', async () => {
    const { client, partnerId } = await newPartner();
    await fulfilmentResult((await buy(client)).public_id);
    const s = getStack();
    const live = await s.credentials.issue({ partnerId, environment: 'live', scopes: ['webhook'], rateLimitPerSecond: 1000 });
    const res = await new PartnerClient(s.baseUrl, live).get<Page>('/api/partner/v1/events');
    assert.deepEqual(res.body.data, []);
  });

  it('resuming from any cursor while events are written concurrently skips and repeats nothing', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    const writers = 8;
    const perWriter = 15;
    let writing = true;
    const write = async (w: number) => {
      for (let i = 0; i < perWriter; i++) {
        // Transactions that hold their event open for a random while, committing out of start order.
        await s.dataSource.transaction(async (tx) => {
          await appendEvent(tx, { partnerId, environment: 'sandbox', type: 'order.created', data: { writer: w, i }, dedupeKey: `test:${partnerId}:${w}:${i}` });
          await tx.query('SELECT pg_sleep($1)', [Math.random() * 0.02]);
        });
      }
    };
    const seen: string[] = [];
    let cursor: string | undefined;
    const read = async () => {
      while (writing) {
        const page = await client.get<Page>(`/api/partner/v1/events?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...page.body.data.map((e) => e.id));
        cursor = page.body.next_cursor;
      }
    };
    const reader = read();
    await Promise.all(Array.from({ length: writers }, (_, w) => write(w)));
    writing = false;
    await reader;
    for (;;) {
      const page = await client.get<Page>(`/api/partner/v1/events?limit=50${cursor ? `&cursor=${cursor}` : ''}`);
      if (!page.body.data.length) break;
      seen.push(...page.body.data.map((e) => e.id));
      cursor = page.body.next_cursor;
    }
    const stored = (await s.dataSource.query('SELECT id FROM events WHERE partner_id = $1 ORDER BY partner_seq', [partnerId])) as Array<{ id: string }>;
    assert.equal(stored.length, writers * perWriter);
    assert.equal(new Set(seen).size, seen.length, 'nothing repeated');
    assert.deepEqual(seen, stored.map((r) => r.id), 'nothing skipped, in history order');
  });
});
