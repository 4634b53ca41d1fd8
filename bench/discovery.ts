/**
 * `npm run bench:discovery`: the signed discovery hot path next to a bare Koa "hello", in one run.
 *
 * This process holds the API (createApp over its own embedded Postgres in a temp directory, or
 * BENCH_DATABASE_URL, with the sandbox inventory imported; signed search through a search process it
 * starts, data in TOOL_CACHE_DIR/bench-search-data, as in production) and the bare Koa server; the load comes
 * from a child process (bench/load.ts), so that the CPU time measured is the API's own.
 * BENCH_ROUNDS (3) rounds run the targets in turn (bare, availability, pricing, search), so noise on
 * this machine falls on all alike; per target and round: BENCH_WARMUP (2000) requests, not counted in any figure, then BENCH_REQUESTS (20000) requests (long enough that the load child's own warm-up does not hold back bare Koa) over BENCH_CONCURRENCY keep-alive
 * connections; only 200 answers count. Printed per target, as medians over the rounds: 200s per second, the
 * ratio to bare Koa of the same round, p50/p99 latency, the
 * API process's CPU ms per measured request (user + system, which includes the pg driver but not Postgres
 * itself), Postgres backends' CPU ms per request (from /proc, when the server is ours), the load
 * child's CPU ms per request (signing, HTTP client), how busy the API process and the load child
 * each were (the share of one core over the measured requests: a single-threaded process near
 * 100 % is what holds that target's rate; bare Koa's is held by the load child, so the ratio to
 * bare Koa moves with the load client's own speed), and RSS.
 * The sandbox rate limit is raised through its documented setting, RATE_LIMIT_SANDBOX_PER_SECOND
 * (default here 1000000 unless set). BENCH_SEARCH=0 leaves signed search out.
 * Availability and pricing run on an API with admission in Redis (a redis-server of its own, as
 * `npm start` runs it, with the change-feed caches; its CPU is printed as Redis), the default where
 * redis-server is installed; BENCH_ADMISSION=postgres runs them with admission in Postgres (the
 * setting without REDIS_URL), and BENCH_ADMISSION=both on both APIs, served from this one process.
 * BENCH_ADMISSION=instant is an experiment: beside the Redis API, the same API with every request
 * admitted at once in this process (no replay store, no rate limit), the bound the signed path
 * would reach if admission cost nothing.
 * Measures, never asserts timings.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Koa from 'koa';
import { createApp } from '../src/api/app';
import { CredentialService } from '../src/auth/credentials';
import { SecretBox } from '../src/auth/secret-box';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/db/data-source';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres';
import { importInventory, parseInventoryCsv } from '../src/discovery/inventory';
import type { DomainSearch } from '../src/discovery/search';
import { findOrCreatePartner } from '../src/partners/partners';
import { startSearchProcess } from '../src/search/search-process';
import { loadInChild, type LoadJob, type LoadResult } from './load';
import { freePort } from '../src/main/child-process';
import { discoveryAppDeps, listen, postgresCpuSeconds, postgresCpuSpent, processCpuSeconds, redisAdmission } from './support';
import type { AdmissionParts } from '../src/main/services';
import type { Admission } from '../src/auth/admission';
import { findRedisServer } from '../src/main/redis-server';

/** BENCH_ADMISSION=instant's admission: every request admitted at once, a full bucket's RateLimit fields. */
const instantAdmission: Admission = {
  makesReads: false,
  admit: async () => ({ outcome: 'admitted', retryAfterSeconds: 0, rateLimit: { remaining: 1000, resetSeconds: 1 } }),
};

const settings = {
  databaseUrl: process.env.BENCH_DATABASE_URL,
  requests: Number(process.env.BENCH_REQUESTS ?? 20000),
  warmup: Number(process.env.BENCH_WARMUP ?? 2000),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 16),
  search: process.env.BENCH_SEARCH !== '0',
  rounds: Number(process.env.BENCH_ROUNDS ?? 3),
  /** Only the signed targets whose name contains this (bare Koa always runs), e.g. BENCH_ONLY=availability. */
  only: process.env.BENCH_ONLY,
  /** redis (the default where redis-server is installed), postgres, both (one process serving both APIs) or instant (an experiment: see the file comment). */
  admission: process.env.BENCH_ADMISSION || undefined,
};
const say = (m: string) => process.stderr.write(`${m}\n`);

interface PhaseResult extends LoadResult {
  name: string;
  apiCpuMsPerRequest: number;
  pgCpuMsPerRequest?: number;
  /** CPU ms per request of the Redis server (Redis admission) or of the search process (search). */
  sideCpuMsPerRequest?: number;
  /** Share of one core the API process and the load child each spent over the measured requests. */
  apiBusy: number;
  clientBusy: number;
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
    let searchPid: number | undefined;
    let search: DomainSearch = { search: async () => { throw new Error('search is left out of this run (BENCH_SEARCH=0)'); } };
    if (settings.search) {
      // As in production: the model and the index live in the host's search process, not in the API's.
      say('starting the search process (model and index)…');
      const socketDir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-bench-search-'));
      const searchProcess = await startSearchProcess({
        env: { ...process.env, DATABASE_URL: postgres.url, SEARCH_URL: `unix:${path.join(socketDir, 'search.sock')}`, DATA_DIR: path.join(config.toolCacheDir, 'bench-search-data'), TOOL_CACHE_DIR: config.toolCacheDir, LOG_LEVEL: 'warn' },
      });
      cleanups.unshift(async () => {
        await searchProcess.stop();
        rmSync(socketDir, { recursive: true, force: true });
      });
      search = searchProcess.client;
      searchPid = searchProcess.pid;
    }
    const secretBox = new SecretBox(Buffer.alloc(32, 7));
    const credentials = new CredentialService(dataSource, secretBox);
    const appWith = (parts: Partial<Omit<AdmissionParts, 'admission'>> & { admission?: Admission } = {}) =>
      createApp(discoveryAppDeps({ config, dataSource, credentials: parts.credentials ?? credentials, admission: parts.admission, listings: parts.listings, secretBox, search }));
    const apis: Array<{ admission: 'Redis' | 'Postgres' | 'instant'; url: string; server: http.Server }> = [];
    let redisPid: number | undefined;
    let redisSent: { batches: number; requests: number } | undefined;
    const redisExecutable = findRedisServer();
    // One admission per run unless asked for both: a production API process runs one, and with both
    // in this process the shared middleware runs hotter (API CPU per request 0.115 ms, against
    // 0.106 with Redis alone, in the same session).
    const admission = settings.admission ?? (redisExecutable ? 'redis' : 'postgres');
    if (!['redis', 'postgres', 'both', 'instant'].includes(admission)) throw new Error(`BENCH_ADMISSION must be redis, postgres, both or instant, not ${admission}`);
    if (!redisExecutable && (admission !== 'postgres' || !settings.admission)) say('redis-server is not installed: Postgres admission only');
    if (admission !== 'postgres' && redisExecutable) {
      const redis = (await redisAdmission(dataSource, secretBox))!;
      cleanups.unshift(() => redis.stop());
      redisPid = redis.pid;
      redisSent = redis.parts.admission!.sent;
      apis.push({ admission: 'Redis', ...(await listen(appWith(redis.parts).callback())) });
      // An experiment, not a setting of the product: the same API with every request admitted at
      // once in this process (no replay store, no bucket), what the signed path would cost if
      // admission cost nothing. Served beside the Redis one, on the same caches.
      if (admission === 'instant') apis.push({ admission: 'instant', ...(await listen(appWith({ ...redis.parts, admission: instantAdmission }).callback())) });
    }
    if (admission === 'postgres' || admission === 'both' || !redisExecutable) apis.push({ admission: 'Postgres', ...(await listen(appWith().callback())) });
    const api = apis[0];
    const bare = new Koa();
    bare.use((ctx) => {
      ctx.body = { hello: 'world' };
    });
    const bareServer = await listen(bare.callback());
    cleanups.unshift(async () => {
      for (const s of [...apis.map((a) => a.server), bareServer.server]) {
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
    const job = (baseUrl: string, paths: string[], requests = settings.requests, warmup = settings.warmup, signed = true): LoadJob => ({
      baseUrl,
      credential: signed ? credential : undefined,
      paths,
      requests,
      warmup,
      concurrency: settings.concurrency,
    });
    // The first signed requests compile the whole signed path (JIT) and open and prepare the pool's connections: done once here, so no measured phase pays for it.
    const warmUps = apis.map((a) => job(a.url, shuffle(names).flatMap((n) => [`/api/partner/v1/availability?domain=${n}`, `/api/partner/v1/pricing?domain=${n}`]), 3000, 0));
    const targets: Array<{ name: string; job: LoadJob }> = [
      { name: 'bare Koa hello', job: job(bareServer.url, ['/'], settings.requests, settings.warmup, false) },
      ...apis.flatMap((a) => [
        { name: `availability (${a.admission})`, job: job(a.url, shuffle(names).map((n) => `/api/partner/v1/availability?domain=${n}`)) },
        { name: `pricing (${a.admission})`, job: job(a.url, shuffle(listed).map((n) => `/api/partner/v1/pricing?domain=${n}`)) },
      ]),
    ];
    if (settings.search) {
      targets.push({ name: 'search', job: job(api.url, queries.map((q) => `/api/partner/v1/domains/search?q=${encodeURIComponent(q)}`), Math.ceil(settings.requests / 4), queries.length) });
    }
    if (settings.only) targets.splice(1, targets.length, ...targets.filter((t, i) => i > 0 && t.name.includes(settings.only!)));
    let rss = process.memoryUsage().rss;
    const sample = setInterval(() => (rss = Math.max(rss, process.memoryUsage().rss)), 200);
    const measure = async (name: string, load: LoadJob): Promise<PhaseResult> => {
      say(`${name}: ${load.warmup} warm-up + ${load.requests} requests at concurrency ${load.concurrency}…`);
      let cpu = process.cpuUsage();
      let pg0 = postgresCpuSeconds(pgDataDir);
      // The store this target's admission uses (Redis), or the search process for search.
      const sidePid = name.includes('Redis') ? redisPid : name === 'search' ? searchPid : undefined;
      let side0 = processCpuSeconds(sidePid);
      const r = await loadInChild(load, () => {
        cpu = process.cpuUsage();
        pg0 = postgresCpuSeconds(pgDataDir);
        side0 = processCpuSeconds(sidePid);
      });
      const used = process.cpuUsage(cpu);
      const pg1 = postgresCpuSeconds(pgDataDir);
      const side1 = processCpuSeconds(sidePid);
      return {
        name,
        ...r,
        apiCpuMsPerRequest: (used.user + used.system) / 1000 / load.requests,
        apiBusy: (used.user + used.system) / 1e6 / r.seconds,
        clientBusy: (r.clientCpuMsPerRequest * load.requests) / 1000 / r.seconds,
        pgCpuMsPerRequest: ((spent) => (spent === undefined ? undefined : (spent * 1000) / load.requests))(postgresCpuSpent(pg0, pg1)),
        sideCpuMsPerRequest: side0 !== undefined && side1 !== undefined ? ((side1 - side0) * 1000) / load.requests : undefined,
      };
    };
    for (const warmUp of warmUps) await measure('signed warm-up (not reported)', warmUp);
    // Rounds interleave the targets, so a burst of noise on this machine falls on all of them alike;
    // each round's ratio is taken against the bare run of that same round.
    const rounds: PhaseResult[][] = [];
    for (let round = 1; round <= settings.rounds; round++) {
      say(`round ${round} of ${settings.rounds}`);
      const results: PhaseResult[] = [];
      for (const target of targets) results.push(await measure(target.name, target.job));
      rounds.push(results);
    }
    clearInterval(sample);
    await credentials.revoke(issued.keyId);

    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      const mid = Math.floor(sorted.length / 2);
      return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    };
    const rate = (r: PhaseResult) => r.ok / r.seconds;
    const line = (i: number) => {
      const runs = rounds.map((results) => results[i]);
      const ratios = rounds.map((results) => rate(results[i]) / rate(results[0]));
      const others = runs.flatMap((r) => Object.entries(r.other).map(([s, n]) => `${n}×${s}`)).join(' ');
      const pg = runs.map((r) => r.pgCpuMsPerRequest);
      const side = runs.map((r) => r.sideCpuMsPerRequest);
      return [
        runs[0].name.padEnd(22),
        `${median(runs.map(rate)).toFixed(0).padStart(6)} req/s`,
        `${(median(ratios) * 100).toFixed(0).padStart(4)} % of bare (rounds ${ratios.map((x) => (x * 100).toFixed(0)).join('/')})`,
        `p50 ${median(runs.map((r) => r.p50)).toFixed(1).padStart(5)} ms`,
        `p99 ${median(runs.map((r) => r.p99)).toFixed(1).padStart(5)} ms`,
        `CPU ms/req: API ${median(runs.map((r) => r.apiCpuMsPerRequest)).toFixed(3)}`,
        pg.every((x) => x !== undefined) ? `Postgres ${median(pg as number[]).toFixed(3)}` : '',
        side.every((x) => x !== undefined) ? `${runs[0].name === 'search' ? 'search process' : 'Redis'} ${median(side as number[]).toFixed(3)}` : '',
        `load client ${median(runs.map((r) => r.clientCpuMsPerRequest)).toFixed(3)}`,
        `busy: API ${(median(runs.map((r) => r.apiBusy)) * 100).toFixed(0)} %, load client ${(median(runs.map((r) => r.clientBusy)) * 100).toFixed(0)} %`,
        others ? `(not counted: ${others})` : '',
      ].join('  ');
    };
    process.stdout.write(
      [
        `inventory: ${rows.length} sandbox names (${listed.length} listed); ${settings.concurrency} keep-alive connections; ${os.cpus().length} cores; ${settings.rounds} interleaved rounds, medians`,
        ...targets.map((_, i) => line(i)),
        ...(redisSent ? [`Redis admission: ${redisSent.requests} requests in ${redisSent.batches} scripts (${(redisSent.requests / Math.max(1, redisSent.batches)).toFixed(1)} per script)`] : []),
        `API process RSS (API + bare Koa; search in its own process): ${(rss / 1024 / 1024).toFixed(0)} MiB`,
        '',
      ].join('\n'),
    );
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((err) => say(`cleanup: ${(err as Error).message}`));
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
