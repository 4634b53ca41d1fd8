/**
 * Records the data of a running earlier release, for the upgrade test (test/upgrade/upgrade.test.ts).
 * Run against that release's `npm start` (see test/upgrade/README.md):
 *
 *   node dist/test/upgrade/record-release.js pay <base_url> <key_id> <secret> <count> [complete]
 *   node dist/test/upgrade/record-release.js dump <database_url> <commit> <out.json>
 *
 * `pay` opens `count` hosted checkouts through the API and pays each in its page as a browser
 * would (its CSRF cookie and token, the approved sandbox card); with `complete`, it fast-forwards
 * each order's transfer and waits for TRANSFER_COMPLETED. `dump` writes every table's rows as JSON
 * (the inventory only as far as rows refer to it), with the migrations that made the schema.
 */
import { writeFileSync } from 'node:fs';
import { Client } from 'pg';
import { PartnerClient } from '../../src/client/partner-client';

async function pay(baseUrl: string, keyId: string, secret: string, count: number, complete: boolean): Promise<void> {
  const client = new PartnerClient(baseUrl, { keyId, secret });
  const names: string[] = [];
  for (const q of ['coffee', 'cloud', 'studio', 'travel', 'garden', 'health']) {
    const found = (await client.get<{ data: Array<{ name: string; available: boolean }> }>(`/api/partner/v1/domains/search?q=${q}`)).body.data;
    names.push(...found.filter((d) => d.available).map((d) => d.name));
  }
  let paid = 0;
  for (const domain of [...new Set(names)]) {
    if (paid === count) break;
    const session = await client.post<{ session_id: string; checkout_url: string }>('/api/partner/v1/checkout-session', { domain });
    if (session.status !== 201) continue;
    const page = await fetch(session.body.checkout_url);
    const cookie = (page.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
    const html = await page.text();
    const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';
    const form = new URLSearchParams({ pt: field('pt').replace(/&amp;/g, '&'), _csrf: field('_csrf'), name: 'Recorded Buyer', email: 'recorded@example.com', card_number: '4242 4242 4242 4242', expiry: '12/34', cvc: '123' });
    const answer = await fetch(`${baseUrl}/checkout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, body: form.toString(), redirect: 'manual' });
    if (!(await answer.text()).includes('Payment received')) throw new Error(`${domain}: the payment page answered ${answer.status}`);
    const orderId = (await client.get<{ order_id: string }>(`/api/partner/v1/checkout-session/${session.body.session_id}`)).body.order_id;
    paid++;
    if (complete) {
      for (let i = 0; i < 120; i++) {
        const status = (await client.get<{ status: string }>(`/api/partner/v1/orders/${orderId}`)).body.status;
        if (status === 'TRANSFER_COMPLETED' || status === 'TRANSFER_FAILED') break;
        await client.post('/api/partner/v1/sandbox/fast-forward', { object: 'order', id: orderId });
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    console.log(JSON.stringify({ domain, session_id: session.body.session_id, order_id: orderId }));
  }
}

async function dump(databaseUrl: string, commit: string, out: string): Promise<void> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const migrations = (await db.query<{ name: string }>('SELECT name FROM migrations ORDER BY id')).rows.map((r) => r.name);
    const tables = (await db.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'migrations' ORDER BY tablename")).rows.map((r) => r.tablename);
    const rows: Record<string, unknown[]> = {};
    for (const table of tables) {
      // The inventory only as far as rows refer to it (the sandbox CSV makes the rest on any start).
      const where =
        table === 'domains'
          ? 'WHERE t.id IN (SELECT domain_id FROM orders UNION SELECT domain_id FROM checkout_sessions UNION SELECT domain_id FROM quotes)'
          : table === 'request_nonces'
            ? 'WHERE false'
            : '';
      rows[table] = (await db.query<{ rows: unknown[] }>(`SELECT coalesce(json_agg(t), '[]'::json) AS rows FROM "${table}" t ${where}`)).rows[0].rows;
    }
    const recordedAt = (await db.query<{ now: Date }>('SELECT now()')).rows[0].now.toISOString();
    writeFileSync(out, `${JSON.stringify({ release: commit, recorded_at: recordedAt, migrations, tables: rows })}\n`);
    console.log(`${out}: ${tables.length} tables, ${Object.values(rows).reduce((n, r) => n + r.length, 0)} rows`);
  } finally {
    await db.end();
  }
}

const [command, ...args] = process.argv.slice(2);
const run = command === 'pay' ? pay(args[0], args[1], args[2], Number(args[3]), args[4] === 'complete') : command === 'dump' ? dump(args[0], args[1], args[2]) : Promise.reject(new Error('usage: pay|dump …'));
run.catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
