/**
 * `npm run bench:search`: signed GET /domains/search latency (p50/p99) and memory over the dev
 * stack's database (run `npm start` once first so the data exists; it must not be running, as
 * this opens its embedded Postgres), next to a bare Koa "hello" on the same machine in the same
 * run. As deployed: the search process (src/main/search.ts, model and indexes, over the data
 * directory's embeddings and graphs) is started as a child on a Unix socket of its own; the API,
 * the client and the bare Koa share this process, which loads no model. RSS is reported for both.
 * Options: BENCH_REQUESTS (2000), BENCH_CONCURRENCY (16), BENCH_ENV (sandbox).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { createApp } from '../src/api/app';
import { CredentialService } from '../src/auth/credentials';
import { SecretBox } from '../src/auth/secret-box';
import { PartnerClient } from '../src/client/partner-client';
import { loadConfig, type Environment } from '../src/config';
import { findOrCreatePartner } from '../src/partners/partners';
import { openProjectDatabase, resolveMasterKey } from '../src/main/runtime';
import { startSearchProcess } from '../src/search/search-process';
import { discoveryAppDeps } from './support';

const settings = {
  requests: Number(process.env.BENCH_REQUESTS ?? 2000),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 16),
  environment: (process.env.BENCH_ENV ?? 'sandbox') as Environment,
};
/** The labelled queries (literal, meaning, typo) and a few more. */
const QUERIES = [
  ...(JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'data', 'search-queries.json'), 'utf8')) as { queries: Array<{ q: string }> }).queries.map((q) => q.q),
  'attorney at law',
  'hotel paris',
  'solar energy',
];

async function listen(handler: http.RequestListener): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function measure(send: (i: number) => Promise<void>, concurrency = settings.concurrency, requests = settings.requests): Promise<{ p50: number; p99: number; perSecond: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const i = next++;
        const t = process.hrtime.bigint();
        await send(i);
        latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return { p50: latencies[Math.floor(latencies.length * 0.5)], p99: latencies[Math.floor(latencies.length * 0.99)], perSecond: requests / seconds };
}

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' });
  const { dataSource, postgres } = await openProjectDatabase(config, () => undefined);
  const masterKey = resolveMasterKey(config);
  const secretBox = new SecretBox(masterKey);
  const credentials = new CredentialService(dataSource, secretBox);
  const socketDir = mkdtempSync(path.join(os.tmpdir(), 'bench-search-'));
  const searchProcess = await startSearchProcess({
    env: { ...process.env, DATABASE_URL: postgres.url, SEARCH_URL: `unix:${path.join(socketDir, 'search.sock')}`, DATA_DIR: config.dataDir, TOOL_CACHE_DIR: config.toolCacheDir, LOG_LEVEL: 'info' },
  });
  const search = searchProcess.client;
  const [{ n }] = (await dataSource.query(`SELECT count(*)::int AS n FROM domains WHERE environment = $1 AND status IN ('listed', 'reserved')`, [settings.environment])) as Array<{ n: number }>;
  const app = createApp(discoveryAppDeps({ config, dataSource, credentials, secretBox, search }));
  const api = await listen(app.callback());
  const { partner } = await findOrCreatePartner(dataSource, 'benchmark');
  const issued = await credentials.issue({ partnerId: partner.id, environment: settings.environment, scopes: ['search'], rateLimitPerSecond: 1_000_000 });
  const client = new PartnerClient(api.url, { keyId: issued.keyId, secret: issued.secret });

  const bare = new Koa();
  bare.use((ctx) => {
    ctx.body = { hello: 'world' };
  });
  const bareServer = await listen(bare.callback());

  // First sight of each query, one at a time: nothing cached for it yet (its vector, spelling, WordNet senses).
  const cold = await measure(async (i) => void (await client.get(`/api/partner/v1/domains/search?q=${encodeURIComponent(`${QUERIES[i % QUERIES.length]}`)}`)), 1, QUERIES.length);
  const rssBefore = process.memoryUsage().rss;
  const searchRssBefore = (await search.status()).rss;
  const signed = await measure(async (i) => {
    const res = await client.get(`/api/partner/v1/domains/search?q=${encodeURIComponent(QUERIES[i % QUERIES.length])}`);
    if (res.status !== 200) throw new Error(`search answered ${res.status}: ${res.text}`);
  });
  const serial = await measure(async (i) => void (await client.get(`/api/partner/v1/domains/search?q=${encodeURIComponent(QUERIES[i % QUERIES.length])}`)), 1);
  const rss = Math.max(rssBefore, process.memoryUsage().rss);
  const searchRss = Math.max(searchRssBefore, (await search.status()).rss);
  const koa = await measure(async () => void (await (await fetch(bareServer.url)).text()));

  process.stdout.write(
    [
      `names searched (${settings.environment}): ${n}`,
      `signed GET /domains/search: p50 ${signed.p50.toFixed(1)} ms, p99 ${signed.p99.toFixed(1)} ms, ${signed.perSecond.toFixed(0)} req/s at concurrency ${settings.concurrency}`,
      `signed GET /domains/search: p50 ${serial.p50.toFixed(1)} ms, p99 ${serial.p99.toFixed(1)} ms one request at a time`,
      `signed GET /domains/search: p50 ${cold.p50.toFixed(1)} ms, p99 ${cold.p99.toFixed(1)} ms one at a time, each of the ${QUERIES.length} queries seen for the first time`,
      `bare Koa hello:             p50 ${koa.p50.toFixed(1)} ms, p99 ${koa.p99.toFixed(1)} ms, ${koa.perSecond.toFixed(0)} req/s`,
      `API process RSS (API, client and bare Koa together; no model): ${(rss / 1024 / 1024).toFixed(0)} MiB`,
      `search process RSS (model, dictionaries, indexes): ${(searchRss / 1024 / 1024).toFixed(0)} MiB`,
      '',
    ].join('\n'),
  );
  await credentials.revoke(issued.keyId);
  api.server.close();
  bareServer.server.close();
  await searchProcess.stop();
  rmSync(socketDir, { recursive: true, force: true });
  await dataSource.destroy();
  await postgres.stop();
}

main().catch((err) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
