/**
 * `npm run bench:discovery`: the signed discovery hot path next to a bare Koa "hello", in one run.
 *
 * This process holds the API (createApp over its own embedded Postgres in a temp directory, or
 * BENCH_DATABASE_URL, with the sandbox inventory imported) and the bare Koa server; the load comes
 * from a child process (this file again, forked), so that the CPU time measured is the API's own.
 * Per phase: BENCH_WARMUP (1000) requests, not counted in any figure, then BENCH_REQUESTS (4000) requests over BENCH_CONCURRENCY keep-alive
 * connections; only 200 answers count. Printed per phase: 200s per second, p50/p99 latency, the
 * API process's CPU ms per measured request (user + system, which includes the pg driver but not Postgres
 * itself), Postgres backends' CPU ms per request (from /proc, when the server is ours) and RSS.
 * The sandbox rate limit is raised through its documented setting, RATE_LIMIT_SANDBOX_PER_SECOND
 * (default here 1000000 unless set). BENCH_SEARCH=0 leaves signed search out.
 * Measures, never asserts timings.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Koa from 'koa';
import { createApp } from '../src/api/app';
import { CredentialService } from '../src/auth/credentials';
import { SecretBox } from '../src/auth/secret-box';
import { PartnerClient } from '../src/client/partner-client';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/db/data-source';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres';
import { importInventory, parseInventoryCsv } from '../src/discovery/inventory';
import type { DomainSearch } from '../src/discovery/search';
import { createLogger } from '../src/logger';
import { QuoteTokenSigner } from '../src/orders/quote-token';
import { findOrCreatePartner } from '../src/partners/partners';
import { Embedder } from '../src/search/embedder';
import { EmbeddingCache } from '../src/search/embedding-cache';
import { HybridSearch } from '../src/search/hybrid-search';
import { ensureModelFiles, MODEL_ID } from '../src/search/model-files';
import { freePort } from './support';

const settings = {
  databaseUrl: process.env.BENCH_DATABASE_URL,
  requests: Number(process.env.BENCH_REQUESTS ?? 4000),
  warmup: Number(process.env.BENCH_WARMUP ?? 1000),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 16),
  search: process.env.BENCH_SEARCH !== '0',
};
const say = (m: string) => process.stderr.write(`${m}\n`);

/** What the parent asks the load child to do, and what it answers. */
interface LoadJob {
  baseUrl: string;
  credential?: { keyId: string; secret: string };
  paths: string[];
  requests: number;
  warmup: number;
  concurrency: number;
}
interface LoadResult {
  ok: number;
  other: Record<string, number>;
  seconds: number;
  p50: number;
  p99: number;
}

// ---- load child: keep-alive connections, signs each request, counts only 200s ----

async function runLoad(job: LoadJob): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
  const client = job.credential ? new PartnerClient(job.baseUrl, job.credential) : undefined;
  const base = new URL(job.baseUrl);
  const once = (pathAndQuery: string) =>
    new Promise<number>((resolve, reject) => {
      const headers = client ? client.signHeaders('GET', pathAndQuery) : {};
      const req = http.request({ host: base.hostname, port: base.port, path: pathAndQuery, method: 'GET', agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
  const phase = async (count: number, latencies?: number[], statuses?: Record<string, number>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (next < count) {
          const i = next++;
          const t = process.hrtime.bigint();
          const status = await once(job.paths[i % job.paths.length]);
          if (statuses) statuses[status] = (statuses[status] ?? 0) + 1;
          if (latencies && status === 200) latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
        }
      }),
    );
  };
  await phase(job.warmup);
  // The parent samples CPU from here: warm-up (JIT, pool connections, statements prepared) is not counted.
  await new Promise<void>((resolve) => process.send!({ measuring: true }, () => resolve()));
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const started = process.hrtime.bigint();
  await phase(job.requests, latencies, statuses);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const { 200: ok = 0, ...other } = statuses;
  return { ok, other, seconds, p50: latencies[Math.floor(latencies.length * 0.5)] ?? NaN, p99: latencies[Math.floor(latencies.length * 0.99)] ?? NaN };
}

// ---- parent: the API, bare Koa, and one forked load child per phase ----

async function listen(handler: http.RequestListener): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer({ keepAliveTimeout: 60_000 }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** CPU seconds (user + system) of the Postgres processes under `dataDir`'s postmaster, from /proc; undefined when not readable. */
function postgresCpuSeconds(dataDir: string | undefined): number | undefined {
  if (!dataDir) return undefined;
  try {
    const postmaster = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const tick = 100; // USER_HZ on Linux
    let total = 0;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      } catch {
        continue;
      }
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const pid = Number(entry);
      const ppid = Number(fields[1]);
      if (pid === postmaster || ppid === postmaster) total += (Number(fields[11]) + Number(fields[12])) / tick;
    }
    return total;
  } catch {
    return undefined;
  }
}

/** Runs `job` in a forked child; `onMeasuring` is called when its warm-up is over and the measured requests start. */
function loadInChild(job: LoadJob, onMeasuring: () => void): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(__filename, ['--load'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', (m) => ((m as { measuring?: boolean }).measuring ? onMeasuring() : resolve(m as LoadResult)));
    child.once('error', reject);
    child.once('exit', (code) => code !== 0 && reject(new Error(`load child exited with ${code}`)));
    child.send(job);
  });
}

interface PhaseResult extends LoadResult {
  name: string;
  apiCpuMsPerRequest: number;
  pgCpuMsPerRequest?: number;
}

async function main(): Promise<void> {
  const config = loadConfig({ RATE_LIMIT_SANDBOX_PER_SECOND: '1000000', ...process.env, LOG_LEVEL: 'silent' });
  const dir = settings.databaseUrl ? undefined : mkdtempSync(path.join(os.tmpdir(), 'partner-api-bench-discovery-'));
  const postgres = settings.databaseUrl ? { url: settings.databaseUrl, stop: async () => undefined } : await startEmbeddedPostgres(dir!, await freePort(), say);
  const pgDataDir = dir && readdirSync(dir).includes('postmaster.pid') ? dir : dir && readdirSync(dir).map((d) => path.join(dir, d)).find((d) => { try { return readdirSync(d).includes('postmaster.pid'); } catch { return false; } });
  const cleanups: Array<() => Promise<void>> = [() => postgres.stop(), async () => void (dir && rmSync(dir, { recursive: true, force: true }))];
  try {
    const dataSource = await openDatabase(postgres.url);
    cleanups.unshift(() => dataSource.destroy());
    const rows = parseInventoryCsv(readFileSync(path.join(config.projectRoot, 'data', 'sandbox-domains.csv'), 'utf8'));
    await importInventory(dataSource, 'sandbox', rows);
    let search: DomainSearch = { search: async () => { throw new Error('search is left out of this run (BENCH_SEARCH=0)'); } };
    if (settings.search) {
      say('loading the search model and the inventory index…');
      const embedder = await Embedder.load(await ensureModelFiles(config.toolCacheDir, say));
      const hybrid = new HybridSearch(dataSource, embedder, new EmbeddingCache(path.join(config.toolCacheDir, 'embedding-cache', `${MODEL_ID}.log`)));
      await hybrid.load('sandbox');
      search = hybrid;
    }
    const secretBox = new SecretBox(Buffer.alloc(32, 7));
    const credentials = new CredentialService(dataSource, secretBox);
    const app = createApp({
      config,
      dataSource,
      credentials,
      secretBox,
      search,
      workflows: { client: undefined as never, taskQueue: 'bench' },
      quoteSigner: QuoteTokenSigner.fromPem(QuoteTokenSigner.generatePem()),
      logger: createLogger('silent'),
      temporalReady: async () => undefined,
    });
    const api = await listen(app.callback());
    const bare = new Koa();
    bare.use((ctx) => {
      ctx.body = { hello: 'world' };
    });
    const bareServer = await listen(bare.callback());
    cleanups.unshift(async () => {
      for (const s of [api.server, bareServer.server]) {
        s.closeAllConnections();
        s.close();
      }
    });
    const { partner } = await findOrCreatePartner(dataSource, `bench-discovery-${process.pid}`);
    // No per-credential rate: the configured sandbox default (raised above) applies.
    const issued = await credentials.issue({ partnerId: partner.id, environment: 'sandbox', scopes: ['search'] });
    const credential = { keyId: issued.keyId, secret: issued.secret };

    const listed = rows.filter((r) => r.status === 'listed').map((r) => r.name);
    const names = rows.map((r) => r.name);
    const queries = [...(JSON.parse(readFileSync(path.join(config.projectRoot, 'data', 'search-queries.json'), 'utf8')) as { queries: Array<{ q: string }> }).queries.map((q) => q.q)];
    const shuffle = <T>(xs: T[]) => xs.map((x) => [Math.random(), x] as const).sort((a, b) => a[0] - b[0]).map(([, x]) => x);
    const phases: Array<{ name: string; job: LoadJob; unreported?: boolean }> = [
      // The first signed requests compile the whole signed path (JIT) and open and prepare the pool's connections: done once here, so no measured phase pays for it.
      { name: 'signed warm-up (not reported)', unreported: true, job: { baseUrl: api.url, credential, paths: shuffle(names).flatMap((n) => [`/api/partner/v1/availability?domain=${n}`, `/api/partner/v1/pricing?domain=${n}`]), requests: 3000, warmup: 0, concurrency: settings.concurrency } },
      { name: 'bare Koa hello', job: { baseUrl: bareServer.url, paths: ['/'], requests: settings.requests, warmup: settings.warmup, concurrency: settings.concurrency } },
      { name: 'signed GET /availability', job: { baseUrl: api.url, credential, paths: shuffle(names).map((n) => `/api/partner/v1/availability?domain=${n}`), requests: settings.requests, warmup: settings.warmup, concurrency: settings.concurrency } },
      { name: 'signed GET /pricing', job: { baseUrl: api.url, credential, paths: shuffle(listed).map((n) => `/api/partner/v1/pricing?domain=${n}`), requests: settings.requests, warmup: settings.warmup, concurrency: settings.concurrency } },
    ];
    if (settings.search) {
      phases.push({ name: 'signed GET /domains/search', job: { baseUrl: api.url, credential, paths: queries.map((q) => `/api/partner/v1/domains/search?q=${encodeURIComponent(q)}`), requests: Math.ceil(settings.requests / 4), warmup: queries.length, concurrency: settings.concurrency } });
    }
    const results: PhaseResult[] = [];
    let rss = process.memoryUsage().rss;
    const sample = setInterval(() => (rss = Math.max(rss, process.memoryUsage().rss)), 200);
    for (const { name, job, unreported } of phases) {
      say(`${name}: ${job.warmup} warm-up + ${job.requests} requests at concurrency ${job.concurrency}…`);
      let cpu = process.cpuUsage();
      let pg0 = postgresCpuSeconds(pgDataDir);
      const r = await loadInChild(job, () => {
        cpu = process.cpuUsage();
        pg0 = postgresCpuSeconds(pgDataDir);
      });
      const used = process.cpuUsage(cpu);
      const pg1 = postgresCpuSeconds(pgDataDir);
      if (!unreported) results.push({
        name,
        ...r,
        apiCpuMsPerRequest: (used.user + used.system) / 1000 / job.requests,
        pgCpuMsPerRequest: pg0 !== undefined && pg1 !== undefined ? ((pg1 - pg0) * 1000) / job.requests : undefined,
      });
    }
    clearInterval(sample);
    await credentials.revoke(issued.keyId);

    const bareRate = results[0].ok / results[0].seconds;
    const line = (r: PhaseResult) => {
      const rate = r.ok / r.seconds;
      const others = Object.entries(r.other).map(([s, n]) => `${n}×${s}`).join(' ');
      return [
        r.name.padEnd(28),
        `${rate.toFixed(0).padStart(6)} req/s`,
        `${((rate / bareRate) * 100).toFixed(0).padStart(4)} % of bare`,
        `p50 ${r.p50.toFixed(1).padStart(5)} ms`,
        `p99 ${r.p99.toFixed(1).padStart(5)} ms`,
        `API CPU ${r.apiCpuMsPerRequest.toFixed(3)} ms/req`,
        r.pgCpuMsPerRequest === undefined ? '' : `Postgres CPU ${r.pgCpuMsPerRequest.toFixed(3)} ms/req`,
        others ? `(not counted: ${others})` : '',
      ].join('  ');
    };
    process.stdout.write(
      [
        `inventory: ${rows.length} sandbox names (${listed.length} listed); ${settings.concurrency} keep-alive connections; ${os.cpus().length} cores`,
        ...results.map(line),
        `API process RSS (API + bare Koa${settings.search ? ' + search model' : ''}): ${(rss / 1024 / 1024).toFixed(0)} MiB`,
        '',
      ].join('\n'),
    );
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((err) => say(`cleanup: ${(err as Error).message}`));
  }
}

if (process.argv.includes('--load')) {
  process.once('message', (job) => {
    runLoad(job as LoadJob).then(
      (result) => process.send!(result, () => process.exit(0)),
      (err) => {
        process.stderr.write(`load: ${(err as Error).stack ?? err}\n`);
        process.exit(1);
      },
    );
  });
} else {
  main().catch((err) => {
    process.stderr.write(`bench: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
