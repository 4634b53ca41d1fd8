/**
 * The search process's HTTP face, for the API processes of the same host (SearchClient): one
 * copy of the model, the dictionaries and every environment's index serves them all. Unsigned
 * and unauthenticated, so it listens on a Unix socket (file permissions decide who may call) or
 * on a loopback / private-network address, never a public one.
 *
 *   GET /search?environment=sandbox|live&q=…&limit=…  → { hits: SearchHit[] }
 *   GET /healthz                                       → { status: "ok" }
 *   GET /status                                        → pid, RSS, time in GC and each index's size and kind
 *   POST /reindex                                      → the OpenSearch engine builds a new index and moves its alias (`admin search reindex`)
 */
import { existsSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { PerformanceObserver } from 'node:perf_hooks';
import Router from '@koa/router';
import Koa from 'koa';
import { z } from 'zod';
import type { Environment } from '../config';
import { logAnswerErrors } from '../api/answer-errors';
import { MAX_QUERY_LENGTH } from '../discovery/routes';
import type { DomainSearch } from '../discovery/search';
import type { EngineStatus, SearchStatus } from './search-client';

const SearchQuery = z.object({
  environment: z.enum(['sandbox', 'live']),
  q: z.string().min(1).max(MAX_QUERY_LENGTH),
  limit: z.coerce.number().int().min(1).max(100).optional(),
});

/** What the search process serves: either engine. */
export interface SearchEngine extends DomainSearch {
  status(environment: Environment): EngineStatus;
  /** Saves what the engine keeps on this host (on shutdown). */
  save(): Promise<void>;
  /** Builds the engine's index anew and swaps it in (the OpenSearch engine only). */
  reindex?(): Promise<unknown>;
}

/** The main thread's time in garbage collection since the first searchApp, in ms. */
let gcMs = 0;
let gcObserver: PerformanceObserver | undefined;

/**
 * The search process's routes. `engine` may still be loading (a promise: the process listens
 * before it reads the inventory, so that its health and status answer during a long load):
 * meanwhile /search and /healthz answer 503 `loading` and /status says so.
 */
export function searchApp(engine: SearchEngine | Promise<SearchEngine>, environments: Environment[], log: (m: string) => void): Koa {
  let search: SearchEngine | undefined = 'then' in engine ? undefined : engine;
  const startedAt = Date.now();
  if (!search) void (engine as Promise<SearchEngine>).then((loaded) => (search = loaded)).catch(() => undefined);
  if (!gcObserver) {
    gcObserver = new PerformanceObserver((list) => list.getEntries().forEach((e) => (gcMs += e.duration)));
    gcObserver.observe({ entryTypes: ['gc'] });
  }
  const app = new Koa();
  // A client gone before its answer (an API process stopped) is no failure of this one.
  logAnswerErrors(app, (err, clientGone) => {
    if (!clientGone) log(`an answer failed: ${err.stack ?? err}`);
  });
  const router = new Router();
  // Until the engine has loaded: 503, which the API passes on to partners as search unavailable (Retry-After).
  const loading = (ctx: Koa.Context): boolean => {
    if (search) return false;
    ctx.status = 503;
    ctx.body = { status: 'loading', error: `loading the indexes (${Math.round((Date.now() - startedAt) / 1000)} s so far)` };
    return true;
  };
  router.get('/search', async (ctx) => {
    if (loading(ctx) || !search) return;
    const parsed = SearchQuery.safeParse(ctx.query);
    if (!parsed.success) {
      ctx.status = 400;
      ctx.body = { error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
      return;
    }
    ctx.body = { hits: await search.search(parsed.data.environment, parsed.data.q, parsed.data.limit) };
  });
  router.get('/healthz', (ctx) => {
    if (loading(ctx)) return;
    ctx.body = { status: 'ok' };
  });
  router.get('/status', (ctx) => {
    const status: SearchStatus = { pid: process.pid, rss: process.memoryUsage.rss(), gcMs: +gcMs.toFixed(3), environments: {}, ...(search ? {} : { loading: true }) };
    if (search) for (const environment of environments) status.environments[environment] = search.status(environment);
    ctx.body = status;
  });
  router.post('/reindex', async (ctx) => {
    if (loading(ctx) || !search) return;
    if (!search.reindex) {
      ctx.status = 409;
      ctx.body = { error: 'the embedded engine keeps no index to rebuild: reindex is for SEARCH_ENGINE=opensearch' };
      return;
    }
    ctx.body = await search.reindex();
  });
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      log(`search failed: ${(err as Error).stack ?? err}`);
      ctx.status = 500;
      ctx.body = { error: 'search failed' };
    }
  });
  app.use(router.routes());
  return app;
}

/** Whether something answers on the Unix socket (another search process). */
function socketAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Listens at `url` (`unix:<path>`: a socket file left by a process that died is replaced, one
 * that answers is not; `http://host:port`). Resolves with a close function.
 */
export async function listenSearch(app: Koa, url: string): Promise<{ server: http.Server; close(): Promise<void> }> {
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  let listenOn: { path: string } | { host: string; port: number };
  if (url.startsWith('unix:')) {
    const socketPath = url.slice('unix:'.length);
    if (existsSync(socketPath)) {
      if (await socketAnswers(socketPath)) throw new Error(`another search process answers on ${socketPath}`);
      rmSync(socketPath, { force: true });
    }
    listenOn = { path: socketPath };
  } else {
    const parsed = new URL(url);
    listenOn = { host: parsed.hostname, port: Number(parsed.port || 80) };
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenOn, () => resolve());
  });
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
