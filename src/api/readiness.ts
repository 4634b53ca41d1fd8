/**
 * GET /readyz: Postgres and Temporal (and Redis, when admission is decided there) answer within 2 s, else 503. Anyone may call it (load
 * balancers, docker-compose), so a failure names only the dependency that is down; the reason,
 * which can carry host names, ports or SQL, goes to the log under the request id.
 *
 * The search process is checked too (when search lives in one) but only search needs it: while
 * it is down the answer stays 200, `status: "degraded"` with `checks.search: "unavailable"`, so
 * that a load balancer keeps sending orders, quotes and the rest to this process.
 */
import type { Middleware } from 'koa';
import type { DataSource } from 'typeorm';
import type { DomainSearch } from '../discovery/search';
import { ApiError } from './errors';
import type { AppState } from './state';

const CHECK_TIMEOUT_MS = 2000;

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** What every endpoint needs: down means 503. */
const REQUIRED = new Set(['database', 'temporal', 'admission']);

/** A check's answer serves every /readyz of the next second (and those asked while it runs). */
const REUSE_MS = 1000;

export function readiness(deps: { dataSource: DataSource; temporalReady: () => Promise<void>; search?: Pick<DomainSearch, 'ready'>; admission?: { ready?(): Promise<unknown> } }): Middleware<AppState> {
  const searchReady = deps.search?.ready?.bind(deps.search);
  const admissionReady = deps.admission?.ready?.bind(deps.admission);
  const checks: Record<string, () => Promise<unknown>> = {
    database: () => deps.dataSource.query('SELECT 1'),
    temporal: () => deps.temporalReady(),
    // Redis, when admission is decided there: no signed request is admitted without it.
    ...(admissionReady ? { admission: admissionReady } : {}),
    ...(searchReady ? { search: searchReady } : {}),
  };
  const names = Object.keys(checks);
  // A check that throws instead of rejecting is a dependency down too (the async wrapper), never a 500.
  // Anyone may call /readyz: a flood of calls makes one round of checks a second, not one each.
  let last: { at: number; results: Promise<PromiseSettledResult<unknown>[]> } | undefined;
  return async (ctx) => {
    let fresh = false;
    if (!last || Date.now() - last.at > REUSE_MS) {
      last = { at: Date.now(), results: Promise.allSettled(names.map((name) => withTimeout((async () => checks[name]())(), CHECK_TIMEOUT_MS, name))) };
      fresh = true;
    }
    const results = await last.results;
    const down: string[] = [];
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') return;
      down.push(names[i]);
      // Logged once, under the request that ran the check.
      if (fresh) ctx.state.log.warn({ dependency: names[i], err: result.reason }, 'not ready');
    });
    const failed = down.filter((name) => REQUIRED.has(name));
    if (failed.length) {
      throw new ApiError(
        'service_unavailable',
        `not ready: ${failed.join(' and ')} unavailable`,
        failed.map((field) => ({ field, issue: 'unavailable' })),
      );
    }
    ctx.body = { status: down.length ? 'degraded' : 'ready', checks: Object.fromEntries(names.map((name) => [name, down.includes(name) ? 'unavailable' : 'ok'])) };
  };
}
