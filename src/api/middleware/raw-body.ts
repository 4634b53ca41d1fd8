import getRawBody from 'raw-body';
import type { Middleware } from 'koa';
import { ApiError } from '../errors';
import type { AppState } from '../state';

export const MAX_BODY_BYTES = 256 * 1024;

/** Reads the exact body bytes: the signature covers them, and JSON is parsed from them later. */
export function rawBody(): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      ctx.state.rawBody = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES });
    } catch (err) {
      const type = (err as { type?: string }).type;
      if (type === 'entity.too.large') throw new ApiError('validation_error', `the body is larger than ${MAX_BODY_BYTES} bytes`);
      if (type === 'request.aborted') throw new ApiError('validation_error', 'the request body was cut off');
      throw err;
    }
    await next();
  };
}
