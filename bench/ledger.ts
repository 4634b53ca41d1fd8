/**
 * `npm run bench:ledger`: money paths measured next to the plain SQL they stand on, in one run,
 * against the benchmark's own fresh database (never a developer's data):
 *
 * 1. Completions per second through `advanceOrder(…, 'TRANSFER_COMPLETED')`, the step the
 *    fulfilment workflow's activity runs (order lock, status and timeline, transaction, balanced
 *    sale posting with its entries under the settlement's lock, event), for N pending orders of
 *    one partner at concurrency C; next to single-row INSERTs into a 4-column scratch table at
 *    the same concurrency and count, one autocommitted statement each.
 * 2. Signed `GET /transactions?limit=20` (a page plus totals over the whole set) and a filtered
 *    variant over a partner's 1M sales, served in-process over HTTP; next to the bare
 *    `SELECT count(*), sum(gross_cents), sum(commission_cents)` of the same rows. Requests one at
 *    a time, the four measurements interleaved, after a warm-up.
 *
 * Measures, never asserts timings. Options (env): BENCH_DATABASE_URL (default: an embedded
 * Postgres in a temp directory, removed at the end; a given database must be one to throw away:
 * the run leaves its sales there and closes every past open settlement in it), BENCH_POSTINGS
 * (2000), BENCH_CONCURRENCY (16), BENCH_TRANSACTIONS (1000000), BENCH_REPS (20), BENCH_WARMUP (3).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { createApp } from '../src/api/app';
import { CredentialService } from '../src/auth/credentials';
import { SecretBox } from '../src/auth/secret-box';
import { PartnerClient } from '../src/client/partner-client';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/db/data-source';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres';
import type { DomainSearch } from '../src/discovery/search';
import { importSandboxInventory } from '../src/discovery/inventory';
import { createLogger } from '../src/logger';
import { advanceOrder } from '../src/orders/fulfilment';
import { QuoteTokenSigner } from '../src/orders/quote-token';
import { findOrCreatePartner } from '../src/partners/partners';
import { anyDomainId, loadSales, pendingOrders } from './ledger-load';
import { freePort } from '../src/main/child-process';
import { listenOnLoopback } from '../src/main/loopback';

const settings = {
  databaseUrl: process.env.BENCH_DATABASE_URL,
  postings: Number(process.env.BENCH_POSTINGS ?? 2000),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 16),
  transactions: Number(process.env.BENCH_TRANSACTIONS ?? 1_000_000),
  reps: Number(process.env.BENCH_REPS ?? 20),
  warmup: Number(process.env.BENCH_WARMUP ?? 3),
};
const say = (m: string) => process.stderr.write(`${m}\n`);
const ms = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e6;

/** Seconds to run `work` over every item with `concurrency` workers. */
async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await work(items[next++]);
  }));
  return ms(started) / 1000;
}

/** Latencies (ms) of each named call, `reps` rounds after `warmup` rounds, the calls interleaved within a round. */
async function interleaved(calls: Record<string, () => Promise<void>>, reps: number, warmup: number): Promise<Record<string, { p50: number; p99: number }>> {
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(calls).map((k) => [k, []]));
  for (let round = 0; round < warmup + reps; round++) {
    for (const [name, call] of Object.entries(calls)) {
      const t = process.hrtime.bigint();
      await call();
      if (round >= warmup) samples[name].push(ms(t));
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => {
    v.sort((a, b) => a - b);
    return [k, { p50: v[Math.floor(v.length * 0.5)], p99: v[Math.min(v.length - 1, Math.floor(v.length * 0.99))] }];
  }));
}

async function ownDatabase(): Promise<{ postgres: RunningPostgres; dir?: string }> {
  if (settings.databaseUrl) return { postgres: { url: settings.databaseUrl, stop: async () => undefined } };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-bench-ledger-'));
  return { postgres: await startEmbeddedPostgres(dir, await freePort(), say), dir };
}

/** Part 1: completions through the real step, then bare single-row INSERTs at the same count and concurrency. */
async function postings(dataSource: DataSource, domainId: string) {
  const { partner } = await findOrCreatePartner(dataSource, `bench-ledger-postings-${process.pid}-${Date.now()}`);
  const orderIds = await pendingOrders(dataSource, partner, domainId, settings.postings);
  say(`completing ${orderIds.length} orders at concurrency ${settings.concurrency}…`);
  const completionSeconds = await pool(orderIds, settings.concurrency, async (orderId) => {
    const result = await advanceOrder(dataSource, { orderId, to: 'TRANSFER_COMPLETED', at: new Date().toISOString() });
    if (result.status !== 'TRANSFER_COMPLETED') throw new Error(`order ${orderId} did not complete`);
  });
  // A plain table about the shape of a ledger row, logged like the real ones.
  await dataSource.query(`CREATE TABLE bench_bare_inserts (id bigserial PRIMARY KEY, partner_id uuid NOT NULL, amount_cents bigint NOT NULL, occurred_at timestamptz NOT NULL)`);
  say(`bare single-row INSERTs: ${settings.postings} at concurrency ${settings.concurrency}…`);
  const bareSeconds = await pool(orderIds, settings.concurrency, async () => {
    await dataSource.query(`INSERT INTO bench_bare_inserts (partner_id, amount_cents, occurred_at) VALUES ($1, $2, now())`, [partner.id, 12_345]);
  });
  await dataSource.query(`DROP TABLE bench_bare_inserts`);
  return { completionsPerSecond: orderIds.length / completionSeconds, completionSeconds, insertsPerSecond: orderIds.length / bareSeconds, bareSeconds };
}

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' });
  const { postgres, dir } = await ownDatabase();
  let rss = process.memoryUsage().rss;
  const sample = setInterval(() => (rss = Math.max(rss, process.memoryUsage().rss)), 250);
  const cleanups: Array<() => Promise<void>> = [
    async () => clearInterval(sample),
    () => postgres.stop(),
    async () => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  ];
  try {
    const dataSource = await openDatabase(postgres.url, { poolSize: settings.concurrency + 4 });
    cleanups.unshift(() => dataSource.destroy());
    await importSandboxInventory(dataSource, config.projectRoot);
    const domainId = await anyDomainId(dataSource);

    const part1 = await postings(dataSource, domainId);

    const { partner } = await findOrCreatePartner(dataSource, `bench-ledger-reporting-${process.pid}-${Date.now()}`);
    const anchor = new Date(Date.now() - 60 * 60 * 1000);
    const loadStarted = process.hrtime.bigint();
    await loadSales(dataSource, partner, domainId, settings.transactions, anchor, (done) => say(`loaded ${done} sales (${(ms(loadStarted) / 1000).toFixed(0)} s)`));
    const loadSeconds = ms(loadStarted) / 1000;

    const secretBox = new SecretBox(Buffer.alloc(32, 7));
    const credentials = new CredentialService(dataSource, secretBox);
    const failingSearch: DomainSearch = { search: async () => { throw new Error('search is not part of this benchmark'); } };
    const app = createApp({
      config,
      dataSource,
      credentials,
      secretBox,
      search: failingSearch,
      // GET /transactions reads the database only: nothing here starts a workflow.
      workflows: { client: undefined as never, taskQueue: 'bench' },
      quoteSigner: QuoteTokenSigner.fromPem(QuoteTokenSigner.generatePem()),
      logger: createLogger('silent'),
      temporalReady: async () => undefined,
    });
    const server = http.createServer(app.callback());
    const { url } = await listenOnLoopback(server);
    cleanups.unshift(async () => { server.closeAllConnections(); server.close(); });
    const issued = await credentials.issue({ partnerId: partner.id, environment: 'sandbox', scopes: ['report'], rateLimitPerSecond: 1_000_000 });
    const client = new PartnerClient(url, { keyId: issued.keyId, secret: issued.secret });

    // Filtered: partner-collected sales of the three whole months that ended two months before the anchor.
    const y = anchor.getUTCFullYear();
    const m = anchor.getUTCMonth();
    const from = new Date(Date.UTC(y, m - 4, 1));
    const toExclusive = new Date(Date.UTC(y, m - 1, 1));
    const day = (d: Date) => d.toISOString().slice(0, 10);
    const filteredPath = `/api/partner/v1/transactions?limit=20&payment_model=partner_collected&from=${day(from)}&to=${day(new Date(toExclusive.getTime() - 86_400_000))}`;

    type Totals = { count: number; gmv_cents: number; commission_cents: number };
    const seen: Record<string, Totals> = {};
    const endpoint = (name: string, url: string) => async () => {
      const res = await client.get<{ data: unknown[]; totals: Totals }>(url);
      if (res.status !== 200 || res.body.data.length !== 20) throw new Error(`GET ${url} answered ${res.status}: ${res.text.slice(0, 300)}`);
      seen[name] = res.body.totals;
    };
    const bare = (name: string, sql: string, params: unknown[]) => async () => {
      const [row] = (await dataSource.query(sql, params)) as Array<{ count: string; gross: string; commission: string }>;
      seen[name] = { count: Number(row.count), gmv_cents: Number(row.gross), commission_cents: Number(row.commission) };
    };
    const BARE = 'SELECT count(*), sum(gross_cents) AS gross, sum(commission_cents) AS commission FROM transactions WHERE partner_id = $1';
    say(`GET /transactions and bare sums: ${settings.warmup} warm-up + ${settings.reps} rounds…`);
    const t = await interleaved(
      {
        endpoint: endpoint('endpoint', '/api/partner/v1/transactions?limit=20'),
        bare: bare('bare', BARE, [partner.id]),
        endpointFiltered: endpoint('endpointFiltered', filteredPath),
        bareFiltered: bare('bareFiltered', `${BARE} AND payment_model = 'partner_collected' AND occurred_at >= $2 AND occurred_at < $3`, [partner.id, from, toExclusive]),
      },
      settings.reps,
      settings.warmup,
    );
    // Same rows on both sides (the endpoint's sums leave out reversed sales; the bare ones do not).
    if (seen.endpoint.count !== seen.bare.count || seen.endpointFiltered.count !== seen.bareFiltered.count) {
      throw new Error(`counts differ: ${JSON.stringify(seen)}`);
    }
    const [{ size }] = (await dataSource.query(`SELECT pg_size_pretty(pg_database_size(current_database())) AS size`)) as Array<{ size: string }>;
    await credentials.revoke(issued.keyId);

    const row = (label: string, value: string, bareLabel: string, bareValue: string, ratio: string) =>
      `${label.padEnd(34)}${value.padStart(28)}   ${bareLabel.padEnd(26)}${bareValue.padStart(28)}   ${ratio}`;
    const lat = (x: { p50: number; p99: number }) => `p50 ${x.p50.toFixed(1)} / p99 ${x.p99.toFixed(1)} ms`;
    process.stdout.write(
      [
        `ledger: ${settings.postings} completions at concurrency ${settings.concurrency}; ${seen.bare.count} transactions of one partner (${seen.endpointFiltered.count} in the filtered set), loaded in ${loadSeconds.toFixed(0)} s; database ${size}`,
        row('', 'measured', 'bare baseline', '', 'ratio'),
        row('order completions (advanceOrder)', `${part1.completionsPerSecond.toFixed(0)}/s`, 'single-row INSERT', `${part1.insertsPerSecond.toFixed(0)}/s`, `${(part1.completionsPerSecond / part1.insertsPerSecond).toFixed(2)}`),
        row('GET /transactions?limit=20', lat(t.endpoint), 'SELECT count, sum, sum', lat(t.bare), `${(t.endpoint.p50 / t.bare.p50).toFixed(2)}× (p50)`),
        row('  ?payment_model=…&from=…&to=…', lat(t.endpointFiltered), '  … same filter', lat(t.bareFiltered), `${(t.endpointFiltered.p50 / t.bareFiltered.p50).toFixed(2)}× (p50)`),
        `latencies: one request at a time, ${settings.reps} rounds after ${settings.warmup} warm-up; process RSS (API, client and loader together): max ${(rss / 1024 / 1024).toFixed(0)} MiB`,
        '',
      ].join('\n'),
    );
  } finally {
    for (const cleanup of cleanups) {
      await cleanup().catch((err: Error) => say(`cleanup: ${err.message}`));
    }
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
