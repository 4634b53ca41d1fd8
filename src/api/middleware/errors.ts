import type { Middleware } from 'koa';
import { ApiError, errorBody } from '../errors';
import type { AppState } from '../state';

/**
 * The one place errors become HTTP answers (CONTRACT §2). Expected outcomes arrive as ApiError;
 * anything else is logged with its stack and answered as a bare 500 `internal_error`.
 */
export function errorMapping(): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError('not_found', `no route for ${ctx.method} ${ctx.path}`);
      }
    } catch (err) {
      const requestId = ctx.state.requestId;
      if (err instanceof ApiError) {
        ctx.status = err.status;
        for (const [name, value] of Object.entries(err.headers)) ctx.set(name, value);
        ctx.body = errorBody(err.code, err.message, requestId, err.details);
      } else {
        ctx.state.log?.error({ err }, 'unexpected failure');
        ctx.status = 500;
        ctx.body = errorBody('internal_error', 'an unexpected error occurred; retry with exponential back-off', requestId);
      }
      ctx.type = 'application/json';
    }
  };
}
