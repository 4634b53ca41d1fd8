/**
 * bench:search's `synthetic:<main ms>/<worker ms>` engine: a search process whose engine spends a
 * set CPU time a search and nothing else. The real search server (searchApp on its own socket,
 * the same HTTP and validation) answers five fixed hits after its engine has spent `main` ms of
 * its main thread's CPU and `worker` ms of a worker thread's, each as rounds of arithmetic
 * (how many a ms takes is measured when it starts; the benchmark reports the CPU each thread
 * really spent, from /proc). The worker is asked first, so the two overlap entirely (the real
 * engine overlaps only its keyword step with the graph's search). Run through the same API,
 * admission and load client as the real engines, it tells what this host can serve when a search
 * costs that much: an upper bound for any search process of that cost, since spinning on
 * arithmetic reads no memory and evicts nobody's cache. Forked by bench/search.ts with SEARCH_URL
 * set; never part of the service.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { Environment } from '../src/config';
import type { SearchHit } from '../src/discovery/search';
import type { EngineStatus } from '../src/search/search-client';
import { listenSearch, searchApp, type SearchEngine } from '../src/search/search-server';

/** Where spin leaves its result, so that no compiler drops the loop as unused. */
let sink = 0;

/** A fixed piece of arithmetic: it reads no memory, so it costs the same CPU whoever else runs. */
function spin(rounds: number): void {
  let x = sink | 1;
  for (let i = 0; i < rounds; i++) x = Math.imul(x, 1_103_515_245) + 12_345;
  sink = x;
}

/** Spins for `ms` of CPU at the measured `roundsPerMs` (the main thread and the worker alike). */
const spinFor = (ms: number, roundsPerMs: number) => spin(Math.round(ms * roundsPerMs));

/**
 * Rounds of spin a ms of CPU takes, measured once at start over ~300 ms of this thread's CPU
 * (process.threadCpuUsage lags the running slice by up to a scheduler tick: fine over 300 ms,
 * too coarse to stop a 4 ms spin on).
 */
function calibrate(): number {
  const cpu = () => {
    const { user, system } = process.threadCpuUsage();
    return user + system;
  };
  spin(5_000_000);
  const start = cpu();
  let rounds = 0;
  while (cpu() - start < 300_000) {
    spin(1_000_000);
    rounds += 1_000_000;
  }
  return rounds / ((cpu() - start) / 1000);
}

/** Five hits in the answer's shape (the API maps them, it looks none up). */
const HITS: SearchHit[] = ['coffeemarket.co', 'coffeepantry.com', 'coffeejoy.ai', 'procoffee.com', 'coffeenova.com'].map((name, i) => ({
  name,
  available: true,
  buyNowPriceCents: 199_500 + i * 100_000,
  currency: 'USD',
  score: 0.83 - i * 0.02,
}));

function parse(name: string): number {
  const ms = Number(process.env[name] ?? 0);
  if (!Number.isFinite(ms) || ms < 0) throw new Error(`${name}: a CPU time in ms, at least 0`);
  return ms;
}

async function main(): Promise<void> {
  const mainMs = parse('SYNTHETIC_MAIN_MS');
  const workerMs = parse('SYNTHETIC_WORKER_MS');
  const roundsPerMs = calibrate();
  const worker = new Worker(__filename, { workerData: roundsPerMs });
  const waiting = new Map<number, () => void>();
  let next = 0;
  worker.on('message', (id: number) => {
    waiting.get(id)?.();
    waiting.delete(id);
  });
  // Without its worker no search would ever be answered: the process goes, and the benchmark with it.
  worker.on('error', (err) => {
    process.stderr.write(`synthetic search: the worker failed: ${err.stack ?? err}\n`);
    process.exit(1);
  });
  worker.on('exit', (code) => {
    process.stderr.write(`synthetic search: the worker exited (code ${code})\n`);
    process.exit(1);
  });
  const engine: SearchEngine = {
    async search(_environment: Environment, _query: string, limit?: number) {
      const id = next++;
      const workerDone = workerMs > 0 ? new Promise<void>((resolve) => waiting.set(id, resolve)) : undefined;
      if (workerDone) worker.postMessage({ id, ms: workerMs });
      spinFor(mainMs, roundsPerMs);
      await workerDone;
      return HITS.slice(0, limit ?? HITS.length).map((h) => ({ ...h }));
    },
    status: (): EngineStatus => ({ names: HITS.length, pendingVectors: 0, vectorIndex: 'exact', building: false }),
    save: async () => undefined,
  };
  const url = process.env.SEARCH_URL;
  if (!url) throw new Error('SEARCH_URL is required');
  const server = await listenSearch(searchApp(engine, ['sandbox', 'live'], (m) => process.stderr.write(`${m}\n`)), url);
  const stop = async () => {
    await server.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('disconnect', () => void stop());
  process.send?.({ type: 'ready', url });
}

if (isMainThread) {
  main().catch((err) => {
    process.stderr.write(`synthetic search: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
} else {
  const roundsPerMs = workerData as number;
  parentPort!.on('message', ({ id, ms }: { id: number; ms: number }) => {
    spinFor(ms, roundsPerMs);
    parentPort!.postMessage(id);
  });
}
