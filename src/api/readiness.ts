/**
 * GET /readyz: Postgres and Temporal both answer within 2 s. Anyone may call it (load balancers,
 * docker-compose), so a failure names only the dependency that is down; the reason, which can
 * carry host names, ports or SQL, goes to the log under the request id.
 */
import type { Middleware } from 'koa';
import type { DataSource } from 'typeorm';
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

export function readiness(deps: { dataSource: DataSource; temporalReady: () => Promise<void> }): Middleware<AppState> {
  return async (ctx) => {
    const checks = {
      database: () => deps.dataSource.query('SELECT 1'),
      temporal: () => deps.temporalReady(),
    };
    const names = Object.keys(checks) as Array<keyof typeof checks>;
    const results = await Promise.allSettled(names.map((name) => withTimeout(checks[name](), CHECK_TIMEOUT_MS, name)));
    const down: Array<keyof typeof checks> = [];
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') return;
      down.push(names[i]);
      ctx.state.log.warn({ dependency: names[i], err: result.reason }, 'not ready');
    });
    if (down.length) {
      throw new ApiError(
        'service_unavailable',
        `not ready: ${down.join(' and ')} unavailable`,
        down.map((field) => ({ field, issue: 'unavailable' })),
      );
    }
    ctx.body = { status: 'ready', checks: { database: 'ok', temporal: 'ok' } };
  };
}
