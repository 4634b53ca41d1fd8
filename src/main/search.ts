/**
 * The search process of a host (production, docker-compose; `npm start` forks it): the model,
 * the dictionaries and every environment's index, loaded once and shared by all the API
 * processes of the host over SEARCH_URL (a Unix socket by default). It builds, updates and saves
 * HNSW graphs in a worker thread and maps them read-only (src/search/inventory-index.ts), so its
 * event loop loads and writes no graph; what of the index still runs there (mapping a new graph,
 * adding new names' vectors) delays searches at most, never an API process. Needs the database
 * (DATABASE_URL) but no key: it reads the inventory, nothing secret.
 * Forked with an IPC channel, it reports `{ type: 'ready' }` once it listens and stops when its
 * parent goes away.
 */
import { ChangeFeed } from '../db/change-feed';
import { ownShutdownSignals } from '../db/embedded-postgres';
import type { Environment } from '../config';
import { loadConfig } from '../config';
import { createLogger } from '../logger';
import { listenSearch, searchApp } from '../search/search-server';
import { exitStartFailed, openProjectDatabase } from './runtime';
import { startOpenSearchSearch, startSearch } from './services';

const ENVIRONMENTS: Environment[] = ['sandbox', 'live'];

/**
 * Gives what loading the indexes left behind back to the system, once, before the first search:
 * a full collection of V8's memory-reducing kind (`last-resort`: it compacts the old generation
 * and returns its emptied pages; the young generation keeps its size, `--min-semi-space-size`),
 * which `gc()` runs only with `--expose-gc` (SEARCH_NODE_FLAGS). Reading 1M names leaves some
 * 300–450 MiB of heap committed and unused that V8 otherwise keeps (bench/RESULTS.md,
 * 2026-12-03). Nothing is done where the flag was left out.
 */
function releaseLoadGarbage(): { gc_ms: number; rss_mib_before: number; rss_mib: number } | undefined {
  if (!globalThis.gc) return undefined;
  const before = rssMib();
  const started = performance.now();
  globalThis.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return { gc_ms: Math.round(performance.now() - started), rss_mib_before: before, rss_mib: rssMib() };
}

const rssMib = () => Math.round(process.memoryUsage.rss() / 2 ** 20);

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel).child({ process: 'search' });
  const log = (m: string) => logger.info(m);
  const { dataSource, postgres } = await openProjectDatabase(config, log);
  // Both engines' syncs are woken by the listing change feed; while it is heard, the embedded
  // engine's searches read no table.
  const feed = ChangeFeed.forDataSource(dataSource, logger);
  const loading = (config.search.engine === 'opensearch' ? startOpenSearchSearch(config, dataSource, log, ENVIRONMENTS, feed) : startSearch(config, dataSource, log, ENVIRONMENTS, feed)).then((search) => {
    // Before the first search is answered (searchApp waits for `loading`).
    const given = releaseLoadGarbage();
    if (given) logger.info(given, 'search process: what loading left behind given back');
    return search;
  });
  // Listening while the indexes load (minutes at a million names): health and status answer
  // (503 `loading`), and the API answers searches 503 meanwhile. Ready (to npm start) once loaded.
  const server = await listenSearch(searchApp(loading, ENVIRONMENTS, (m) => logger.error(m)), config.search.url);
  logger.info({ url: config.search.url }, 'search process listening; loading the indexes');
  const search = await loading;
  await feed.start();
  logger.info({ url: config.search.url, rss_mib: rssMib() }, 'search process ready');
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await server.close();
    await search.save();
    await feed.close();
    await dataSource.destroy();
    await postgres.stop();
    process.exit(0);
  };
  ownShutdownSignals();
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  if (process.send) {
    process.once('disconnect', () => void stop());
    process.send({ type: 'ready', url: config.search.url });
  }
}

main().catch((err) => exitStartFailed('search', err));
