import type { Middleware } from 'koa';
import { ApiError, errorBody, errorDocUrl } from '../errors';
import { publicOrigin } from '../public-origin';
import { dependencyUnavailable } from '../unavailable';
import type { AppState } from '../state';

/**
 * The one place errors become HTTP answers (CONTRACT §2). Expected outcomes arrive as ApiError;
 * a part underneath that cannot be reached (Postgres, Redis, Temporal restarting) is 503
 * `service_unavailable` with Retry-After (src/api/unavailable.ts); anything else is logged with
 * its stack and answered as a bare 500 `internal_error`.
 */
/** Seconds a partner waits before retrying while a part restarts (most come back within a few). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

export function errorMapping(publicBaseUrl?: string): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
      // Left bare by the router's allowedMethods: 405 for a method the path lacks, 501 for a
      // method no route has; Allow is empty when the path itself is unknown.
      const allow = ctx.response.get('Allow');
      if ((ctx.status === 405 || ctx.status === 501) && ctx.body === undefined && allow) {
        throw new ApiError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allow}`, undefined, { Allow: allow });
      }
      if ((ctx.status === 404 || ctx.status === 501) && ctx.body === undefined) {
        throw new ApiError('not_found', `no route for ${ctx.method} ${ctx.path}`);
      }
    } catch (err) {
      const requestId = ctx.state.requestId;
      if (err instanceof ApiError) {
        ctx.status = err.status;
        for (const [name, value] of Object.entries(err.headers)) ctx.set(name, value);
        ctx.body = errorBody(err.code, err.message, requestId, err.details);
      } else if (dependencyUnavailable(err)) {
        ctx.state.log?.warn({ err }, 'a part underneath is unavailable: answered 503');
        ctx.status = 503;
        ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
        ctx.body = errorBody('service_unavailable', 'the service cannot reach a part it needs right now; retry after Retry-After seconds (with the same Idempotency-Key)', requestId);
      } else {
        ctx.state.log?.error({ err }, 'unexpected failure');
        ctx.status = 500;
        ctx.body = errorBody('internal_error', 'an unexpected error occurred; retry with exponential back-off', requestId);
      }
      ctx.type = 'application/json';
    }
    // Every error object links to where /docs explains its code, also a stored answer replayed.
    const body = ctx.body as { error?: { code?: unknown; doc_url?: unknown } } | undefined;
    if (ctx.status >= 400 && body && typeof body === 'object' && body.error && typeof body.error.code === 'string' && body.error.doc_url === undefined) {
      ctx.body = { ...body, error: { ...body.error, doc_url: errorDocUrl(publicOrigin(publicBaseUrl, ctx.headers), body.error.code) } };
    }
  };
}
