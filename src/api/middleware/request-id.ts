import { randomBytes } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../state';

/** Gives every request an id (`req_…`), echoed in `X-Request-Id`, and a logger bound to it. */
export function requestContext(logger: Logger): Middleware<AppState> {
  return async (ctx, next) => {
    const requestId = `req_${randomBytes(12).toString('hex')}`;
    ctx.state.requestId = requestId;
    ctx.state.log = logger.child({ request_id: requestId });
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // Paths only, never query strings or headers: they can carry signatures and key material.
      ctx.state.log.info(
        { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 100) / 100, partner_id: ctx.state.auth?.partnerId },
        'request',
      );
    }
  };
}
