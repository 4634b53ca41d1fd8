import getRawBody from 'raw-body';
import type { Middleware, Next, ParameterizedContext } from 'koa';
import { ApiError } from '../errors';
import type { AppState } from '../state';

export const MAX_BODY_BYTES = 256 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * Reads the exact body bytes: the signature covers them, and JSON is parsed from them later.
 * A body that cannot be read is the request's fault (400 validation_error), whatever the reason.
 */
export function rawBody(): Middleware<AppState> {
  // Not async: a request without a body (most are GETs) costs no promise here.
  return (ctx, next) => {
    const encoding = ctx.get('Content-Encoding').trim().toLowerCase();
    // Decoding would break the signature over the bytes as sent; not decoding would parse gzip as JSON.
    if (encoding && encoding !== 'identity') {
      throw new ApiError('validation_error', `Content-Encoding ${encoding} is not supported: send the body uncompressed`, [
        { field: 'header.content-encoding', issue: 'unsupported' },
      ]);
    }
    const headers = ctx.req.headers;
    if (headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) {
      // HTTP/1.1: without either header a request has no body (RFC 9112 §6.3); nothing to read.
      ctx.state.rawBody = EMPTY;
      return next();
    }
    return readBody(ctx, next);
  };
}

async function readBody(ctx: ParameterizedContext<AppState>, next: Next): Promise<void> {
  try {
    ctx.state.rawBody = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, length: ctx.req.headers['content-length'] });
  } catch (err) {
    throw unreadableBody(err as Error & { type?: string }, ctx.state);
  }
  await next();
}

function unreadableBody(err: Error & { type?: string }, state: AppState): Error {
  switch (err.type) {
    case 'entity.too.large':
      return new ApiError('validation_error', `the body is larger than ${MAX_BODY_BYTES} bytes`, [{ field: 'body', issue: 'too large' }]);
    case 'request.aborted':
      return new ApiError('validation_error', 'the request body was cut off', [{ field: 'body', issue: 'incomplete' }]);
    case 'request.size.invalid':
      return new ApiError('validation_error', 'the body length does not match Content-Length', [{ field: 'body', issue: 'length mismatch' }]);
    // Something in this process read the stream first: a bug here, not in the request.
    case 'stream.not.readable':
    case 'stream.encoding.set':
      return err;
    default:
      state.log?.info({ err }, 'request body unreadable');
      return new ApiError('validation_error', 'the request body could not be read', [{ field: 'body', issue: 'unreadable' }]);
  }
}
