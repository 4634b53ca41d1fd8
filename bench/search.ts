/**
 * `npm run bench:search`: signed GET /domains/search latency (p50/p99) and memory over the dev
 * stack's database (run `npm start` once first so the data exists; it must not be running, as
 * this opens its embedded Postgres), next to a bare Koa "hello" on the same machine in the same
 * run. As deployed: the search process (src/main/search.ts, model and indexes, over the data
 * directory's embeddings and graphs) is started as a child on a Unix socket of its own; the API
 * and the bare Koa share this process, which loads no model. RSS is reported for both. The load at
 * concurrency comes from a child process (bench/load.ts: keep-alive connections, each request
 * signed; twice the queries first, not counted), as does bare Koa's (2,000 requests, then 20,000
 * measured); the cold and one-at-a-time searches are sent from this process.
 * Each engine in turn (BENCH_ENGINES, default `embedded,opensearch,opensearch-2nodes`; an entry
 * that names no engine stops the run before any starts): the OpenSearch one on
 * OPENSEARCH_URL, else on a local node of its own, into a fresh alias so that indexing the whole
 * inventory is timed (the embedded engine's ready time reads its embeddings cache instead).
 * `opensearch-2nodes` runs it on a local cluster of two nodes, the index in 2 shards with a replica each.
 * `synthetic:<main ms>/<worker ms>` runs a stand-in search process (bench/synthetic-search.ts)
 * that spends that much CPU a search on its two threads and nothing else: what this host serves
 * through the same API, admission and load client at a given search cost.
 * An OpenSearch index is searched once its merges have settled (a fresh one at 1M names is still
 * merging the segments its bulk writes made; the wait and the segments are printed), the embedded
 * engine once its first HNSW graph is built (a data directory with no saved graph of a large
 * inventory: the exact index answers meanwhile; the wait is printed).
 * It prints, besides, each process's CPU ms per search at concurrency (user + system, from /proc):
 * this process (the API), the load child (signing, HTTP client), the search process, the OpenSearch nodes, Postgres (ours only),
 * Redis; and the search process's by thread: how busy its main thread was (a single thread that,
 * near 100 %, bounds the searches/s whatever the cores), and its other threads. Admission is in
 * Redis as npm start runs it (a redis-server of its own) where redis-server is installed, else in
 * Postgres.
 * Options: BENCH_REQUESTS (2000), BENCH_CONCURRENCY (16), BENCH_ENV (sandbox), BENCH_ENGINES,
 * BENCH_ADMISSION=postgres.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Koa from 'koa';
import { createApp } from '../src/api/app';
import { CredentialService } from '../src/auth/credentials';
import { SecretBox } from '../src/auth/secret-box';
import { PartnerClient } from '../src/client/partner-client';
import { loadConfig, type Environment } from '../src/config';
import { findOrCreatePartner } from '../src/partners/partners';
import { openProjectDatabase, resolveMasterKey } from '../src/main/runtime';
import { startLocalOpenSearch, type LocalOpenSearch } from '../src/search/opensearch/local-node';
import type { SearchClient } from '../src/search/search-client';
import { startSearchProcess } from '../src/search/search-process';
import { loadInChild } from './load';
import { freePorts } from '../src/main/child-process';
import { discoveryAppDeps, listen, postgresCpuSeconds, postgresCpuSpent, processCpuSeconds, redisAdmission, threadsCpuSeconds } from './support';

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

/** The resident memory of a process, from /proc (0 when it is gone). */
function rssOf(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Local OpenSearch nodes forming one cluster (one: a single node), each with its data under `dir`; resolves when the cluster is green or yellow. */
async function startNodes(count: number, dir: string, cacheDir: string, heap: string): Promise<LocalOpenSearch[]> {
  if (count === 1) return [await startLocalOpenSearch({ cacheDir, dataDir: dir, heap })];
  const transport = await freePorts(count);
  const names = transport.map((_, i) => `node-${i}`);
  const nodes = await Promise.all(
    names.map((name, i) =>
      startLocalOpenSearch({
        cacheDir,
        dataDir: path.join(dir, name),
        heap,
        settings: { 'node.name': name, 'transport.port': String(transport[i]), 'discovery.seed_hosts': transport.map((p) => `127.0.0.1:${p}`).join(','), 'cluster.initial_cluster_manager_nodes': names.join(',') },
      }),
    ),
  );
  const health = await (await fetch(`${nodes[0].url}/_cluster/health?wait_for_nodes=${count}&timeout=60s`)).json() as { number_of_nodes: number };
  if (health.number_of_nodes !== count) throw new Error(`the local cluster has ${health.number_of_nodes} nodes of ${count}`);
  return nodes;
}

interface EngineRun {
  engine: string;
  /** From the search process's start until it answers: reading, embedding (cached or not) and indexing the inventory. */
  readySeconds: number;
  /** OpenSearch: how long its fresh index's merges took to settle after it was ready, its segments, and its primaries' size and documents then. */
  settled?: Awaited<ReturnType<typeof mergesSettled>>;
  /** Embedded: how long its first HNSW graph took to build after it was ready (undefined when one was saved or none is needed). */
  graphWait?: number;
  cold: Awaited<ReturnType<typeof measure>>;
  signed: Awaited<ReturnType<typeof measure>>;
  serial: Awaited<ReturnType<typeof measure>>;
  searchRss: number;
  openSearchRss?: number;
  /** CPU ms per search at concurrency, by process: this one (the API), the load child, the search process, the OpenSearch nodes, Postgres. */
  cpuMs: { api: number; client: number; search?: number; openSearch?: number; postgres?: number; redis?: number };
  /**
   * The search process's threads at concurrency: its main thread's CPU ms per search and the
   * share of the measured load's time it was busy (near 1: it bounds the searches/s), and its
   * other threads' (the HNSW graph's worker, V8's and libuv's), busiest first.
   */
  searchThreads: { mainMs: number; mainBusy: number; others: Array<{ name: string; ms: number }> };
}

/**
 * Waits until three looks 5 s apart see no merge running on the index (so at least 15 s), up to
 * an hour: how long that took, whether the hour ran out first, its segments (primaries and
 * replicas) before and after, and its primaries' bytes on disk and documents after (the per-name
 * cost a cluster is sized from).
 */
async function mergesSettled(url: string, index: string) {
  const started = Date.now();
  const look = async () => {
    const res = await fetch(`${url}/${index}/_stats/merge,segments,store,docs`);
    if (!res.ok) throw new Error(`${index}/_stats: ${res.status} ${await res.text()}`);
    type Stats = { merges: { current: number }; segments: { count: number }; store: { size_in_bytes: number }; docs: { count: number } };
    const { total, primaries } = ((await res.json()) as { _all: { total: Stats; primaries: Stats } })._all;
    return { merging: total.merges.current, segments: total.segments.count, bytes: primaries.store.size_in_bytes, documents: primaries.docs.count };
  };
  const segmentsBefore = (await look()).segments;
  let quiet = 0;
  while (quiet < 3 && Date.now() - started < 60 * 60_000) {
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    quiet = (await look()).merging === 0 ? quiet + 1 : 0;
  }
  const after = await look();
  return { seconds: (Date.now() - started) / 1000, timedOut: quiet < 3, segmentsBefore, segmentsAfter: after.segments, bytes: after.bytes, documents: after.documents };
}

/** Waits (up to an hour) until no environment of the search process is building its HNSW graph: the seconds waited, undefined if none was. */
async function graphsBuilt(search: SearchClient): Promise<number | undefined> {
  const started = Date.now();
  const building = async () => Object.values((await search.status()).environments).some((e) => e.building);
  if (!(await building())) return undefined;
  while ((await building()) && Date.now() - started < 60 * 60_000) await new Promise((resolve) => setTimeout(resolve, 5_000));
  if (await building()) throw new Error('the HNSW graph was still being built after an hour');
  return (Date.now() - started) / 1000;
}

/** `synthetic:<main thread ms>/<worker ms>`: what the stand-in search process spends a search. */
function syntheticCost(engine: string): { mainMs: string; workerMs: string } {
  const match = /^synthetic:(\d+(?:\.\d+)?)\/(\d+(?:\.\d+)?)$/.exec(engine);
  if (!match) throw new Error(`${engine}: write synthetic:<main thread ms>/<worker ms>, e.g. synthetic:4/1.7`);
  return { mainMs: match[1], workerMs: match[2] };
}

/** The engines BENCH_ENGINES may name, besides `synthetic:<main thread ms>/<worker ms>`. */
const ENGINES = ['embedded', 'opensearch', 'opensearch-2nodes'];

/**
 * BENCH_ENGINES' entries, each trimmed: ` synthetic:1/0.5` (after a comma and a space) ran the
 * embedded engine before, as anything not starting with `opensearch` or `synthetic` did. An entry
 * that names no engine, or a synthetic one written otherwise, stops the run before any engine starts.
 */
function benchEngines(list: string): string[] {
  const engines = list.split(',').map((entry) => entry.trim());
  for (const engine of engines) {
    if (engine.startsWith('synthetic')) syntheticCost(engine);
    else if (!ENGINES.includes(engine)) throw new Error(`BENCH_ENGINES: ${JSON.stringify(engine)} is not an engine; name ${ENGINES.join(', ')} or synthetic:<main thread ms>/<worker ms>, separated by commas`);
  }
  return engines;
}

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' });
  const engines = benchEngines(process.env.BENCH_ENGINES ?? ENGINES.join(','));
  const { dataSource, postgres } = await openProjectDatabase(config, () => undefined);
  // Our own Postgres (no DATABASE_URL): its processes' CPU is read from /proc.
  const pgDataDir = config.database.url ? undefined : path.join(config.dataDir, 'postgres');
  const masterKey = resolveMasterKey(config);
  const secretBox = new SecretBox(masterKey);
  const credentials = new CredentialService(dataSource, secretBox);
  const [{ n }] = (await dataSource.query(`SELECT count(*)::int AS n FROM domains WHERE environment = $1 AND status IN ('listed', 'reserved')`, [settings.environment])) as Array<{ n: number }>;
  const { partner } = await findOrCreatePartner(dataSource, 'benchmark');
  const issued = await credentials.issue({ partnerId: partner.id, environment: settings.environment, scopes: ['search'], rateLimitPerSecond: 1_000_000 });
  // Admission in Redis, as npm start runs it, where redis-server is installed (BENCH_ADMISSION=postgres: in Postgres).
  const redis = process.env.BENCH_ADMISSION === 'postgres' ? undefined : await redisAdmission(dataSource, secretBox);
  const bare = new Koa();
  bare.use((ctx) => {
    ctx.body = { hello: 'world' };
  });
  const bareServer = await listen(bare.callback());
  let apiRss = 0;
  const runs: EngineRun[] = [];

  for (const engine of engines) {
    const socketDir = mkdtempSync(path.join(os.tmpdir(), 'bench-search-'));
    // OpenSearch: OPENSEARCH_URL, else local nodes of its own (`opensearch-2nodes`: a cluster of two,
    // the index in 2 shards with a replica each); a fresh alias, so the whole inventory is indexed (and timed).
    const openSearch = engine.startsWith('opensearch');
    const synthetic = engine.startsWith('synthetic') ? syntheticCost(engine) : undefined;
    const nodes = openSearch && !config.search.opensearch.url ? await startNodes(engine === 'opensearch-2nodes' ? 2 : 1, socketDir, config.toolCacheDir, config.search.opensearch.heap) : [];
    const layout = engine === 'opensearch-2nodes' ? { OPENSEARCH_SHARDS: '2', OPENSEARCH_REPLICAS: '1' } : {};
    const engineEnv: Record<string, string | undefined> = openSearch ? { SEARCH_ENGINE: 'opensearch', OPENSEARCH_URL: nodes[0]?.url ?? config.search.opensearch.url, OPENSEARCH_INDEX: `bench-search-${Date.now()}`, ...layout } : { SEARCH_ENGINE: 'embedded' };
    const started = Date.now();
    const processEnv = { ...process.env, DATABASE_URL: postgres.url, SEARCH_URL: `unix:${path.join(socketDir, 'search.sock')}`, DATA_DIR: config.dataDir, TOOL_CACHE_DIR: config.toolCacheDir, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', ...engineEnv };
    const searchProcess = synthetic
      ? await startSearchProcess({ env: { ...processEnv, SYNTHETIC_MAIN_MS: synthetic.mainMs, SYNTHETIC_WORKER_MS: synthetic.workerMs } }, path.join(__dirname, 'synthetic-search.js'))
      : // A first indexing of a million names into OpenSearch on this machine takes ~35 minutes.
        await startSearchProcess({ env: processEnv, timeoutMs: 4 * 60 * 60_000 });
    const readySeconds = (Date.now() - started) / 1000;
    const search = searchProcess.client;
    // A fresh index's merges settle first (mergesSettled): each k-NN query walks every segment's graph.
    const settled = openSearch ? await mergesSettled(engineEnv.OPENSEARCH_URL!, engineEnv.OPENSEARCH_INDEX!) : undefined;
    // The embedded engine answers from the exact index while its first HNSW graph is built: searched once it is.
    const graphWait = openSearch ? undefined : await graphsBuilt(search);
    const app = createApp(discoveryAppDeps({ config, dataSource, credentials: redis?.parts.credentials ?? credentials, admission: redis?.parts.admission, listings: redis?.parts.listings, secretBox, search }));
    const api = await listen(app.callback());
    const credential = { keyId: issued.keyId, secret: issued.secret };
    // One at a time, the client is this process's (latency only, no CPU is read).
    const client = new PartnerClient(api.url, credential);
    const get = (i: number) => client.get(`/api/partner/v1/domains/search?q=${encodeURIComponent(QUERIES[i % QUERIES.length])}`);
    // First sight of each query, one at a time: nothing cached for it yet (its vector, spelling, WordNet senses).
    const cold = await measure(async (i) => void (await get(i)), 1, QUERIES.length);
    const searchRssBefore = rssOf(searchProcess.pid);
    const cpuOf = () => ({ api: process.cpuUsage(), search: processCpuSeconds(searchProcess.pid), searchThreads: threadsCpuSeconds(searchProcess.pid), openSearch: nodes.length ? nodes.reduce((sum, n) => sum + (processCpuSeconds(n.pid) ?? 0), 0) : undefined, postgres: postgresCpuSeconds(pgDataDir), redis: processCpuSeconds(redis?.pid) });
    // At concurrency the load comes from a child process (bench/load.ts), so that this process's CPU is the API's alone.
    let cpu0 = cpuOf();
    const load = await loadInChild({ baseUrl: api.url, credential, paths: QUERIES.map((q) => `/api/partner/v1/domains/search?q=${encodeURIComponent(q)}`), requests: settings.requests, warmup: 2 * QUERIES.length, concurrency: settings.concurrency }, () => (cpu0 = cpuOf()));
    const cpu1 = cpuOf();
    if (Object.keys(load.other).length) throw new Error(`search answered other than 200: ${JSON.stringify(load.other)}`);
    const signed = { p50: load.p50, p99: load.p99, perSecond: load.ok / load.seconds };
    const perSearch = (seconds: number | undefined) => (seconds === undefined ? undefined : (seconds * 1000) / settings.requests);
    const spent = (before?: number, after?: number) => (before === undefined || after === undefined ? undefined : after - before);
    const apiUsed = process.cpuUsage(cpu0.api);
    const cpuMs = {
      api: (apiUsed.user + apiUsed.system) / 1000 / settings.requests,
      client: load.clientCpuMsPerRequest,
      search: perSearch(spent(cpu0.search, cpu1.search)),
      openSearch: perSearch(spent(cpu0.openSearch, cpu1.openSearch)),
      postgres: perSearch(postgresCpuSpent(cpu0.postgres, cpu1.postgres)),
      redis: perSearch(spent(cpu0.redis, cpu1.redis)),
    };
    const threadMs = [...cpu1.searchThreads].map(([tid, { name, cpuSeconds }]) => ({ tid, name, ms: perSearch(cpuSeconds - (cpu0.searchThreads.get(tid)?.cpuSeconds ?? 0))! }));
    const mainThread = threadMs.find((t) => t.tid === searchProcess.pid);
    const mainMs = mainThread?.ms ?? 0;
    const searchThreads = {
      mainMs,
      mainBusy: (mainMs * settings.requests) / 1000 / load.seconds,
      others: threadMs.filter((t) => t !== mainThread && t.ms >= 0.01).sort((a, b) => b.ms - a.ms).map(({ name, ms }) => ({ name, ms })),
    };
    const serial = await measure(async (i) => void (await get(i)), 1);
    apiRss = Math.max(apiRss, process.memoryUsage().rss);
    runs.push({ engine, readySeconds, settled, graphWait, cold, signed, serial, searchRss: Math.max(searchRssBefore, rssOf(searchProcess.pid)), cpuMs, searchThreads, openSearchRss: nodes.length ? nodes.reduce((sum, n) => sum + rssOf(n.pid), 0) : undefined });
    api.server.close();
    await searchProcess.stop();
    if (openSearch && !nodes.length) await fetch(`${config.search.opensearch.url}/${engineEnv.OPENSEARCH_INDEX}*`, { method: 'DELETE' }).catch(() => undefined);
    for (const node of nodes) await node.stop();
    rmSync(socketDir, { recursive: true, force: true });
  }
  // As bench:discovery's: 2,000 requests not counted, then 20,000 (shorter runs understate bare Koa).
  const bareLoad = await loadInChild({ baseUrl: bareServer.url, paths: ['/'], requests: 20_000, warmup: 2_000, concurrency: settings.concurrency });
  const koa = { p50: bareLoad.p50, p99: bareLoad.p99, perSecond: bareLoad.ok / bareLoad.seconds };

  const ms = (x: number) => x.toFixed(1);
  const cpu = (x?: number) => (x === undefined ? '–' : x.toFixed(2));
  const mib = (x?: number) => (x ? `${(x / 1024 / 1024).toFixed(0)} MiB` : '–');
  process.stdout.write(
    [
      `names searched (${settings.environment}): ${n}; ${settings.requests} requests at concurrency ${settings.concurrency}; admission in ${redis ? 'Redis' : 'Postgres'}; ${new Date().toISOString().slice(0, 10)}`,
      '',
      '| engine | ready (index), s | cold p50 / p99, ms | one at a time p50 / p99, ms | concurrency ' + settings.concurrency + ' p50 / p99, ms | req/s | search process RSS | OpenSearch JVM RSS |',
      '|---|---|---|---|---|---|---|---|',
      ...runs.map((r) => `| ${r.engine} | ${r.readySeconds.toFixed(1)} | ${ms(r.cold.p50)} / ${ms(r.cold.p99)} | ${ms(r.serial.p50)} / ${ms(r.serial.p99)} | ${ms(r.signed.p50)} / ${ms(r.signed.p99)} | ${r.signed.perSecond.toFixed(0)} | ${mib(r.searchRss)} | ${mib(r.openSearchRss)} |`),
      `| bare Koa hello | | | | ${ms(koa.p50)} / ${ms(koa.p99)} | ${koa.perSecond.toFixed(0)} | | |`,
      '',
      `API process RSS (API, bare Koa and the one-at-a-time client together; no model): ${mib(apiRss)}`,
      ...runs
        .filter((r) => r.settled)
        .map((r) => `${r.engine}: searched ${r.settled!.timedOut ? 'with merges still running after an hour of waiting' : "once no merge ran on the index (three looks 5 s apart)"}, ${r.settled!.seconds.toFixed(0)} s after it was ready: ${r.settled!.segmentsBefore} segments (primaries and replicas) then, ${r.settled!.segmentsAfter} after; primaries ${(r.settled!.bytes / 2 ** 30).toFixed(1)} GiB on disk for ${r.settled!.documents} documents, ${(r.settled!.bytes / Math.max(1, r.settled!.documents) / 1024).toFixed(1)} KiB each`),
      ...runs.filter((r) => r.graphWait !== undefined).map((r) => `${r.engine}: searched once its HNSW graph was built, ${r.graphWait!.toFixed(0)} s after it was ready (the exact index answered meanwhile)`),
      '',
      `CPU ms per search at concurrency ${settings.concurrency} (user + system; this machine has ${os.cpus().length} cores):`,
      '',
      '| engine | API | load client | search process | OpenSearch | Postgres | Redis |',
      '|---|---|---|---|---|---|---|',
      ...runs.map((r) => `| ${r.engine} | ${cpu(r.cpuMs.api)} | ${cpu(r.cpuMs.client)} | ${cpu(r.cpuMs.search)} | ${cpu(r.cpuMs.openSearch)} | ${cpu(r.cpuMs.postgres)} | ${cpu(r.cpuMs.redis)} |`),
      '',
      ...runs.map(
        (r) =>
          `${r.engine}: the search process's main thread ${cpu(r.searchThreads.mainMs)} ms a search, busy ${(100 * r.searchThreads.mainBusy).toFixed(0)} % of the measured load; ` +
          `its other threads ${r.searchThreads.others.map((t) => `${t.name} ${cpu(t.ms)}`).join(', ') || 'none busy'}`,
      ),
      '',
    ].join('\n'),
  );
  await credentials.revoke(issued.keyId);
  await redis?.stop();
  bareServer.server.close();
  await dataSource.destroy();
  await postgres.stop();
}

main().catch((err) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
