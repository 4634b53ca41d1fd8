import type { Middleware } from 'koa';
import { trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { publicId } from '../../ids';
import type { AppState } from '../state';
import { runInRequest } from '../request-store';

/** A request's state; its logger is made on first use (a getter of the class, not one defined per request). */
class RequestState {
  #child: Logger | undefined;
  readonly #base: Logger;

  constructor(
    readonly requestId: string,
    base: Logger,
  ) {
    this.#base = base;
  }

  get log(): Logger {
    return (this.#child ??= this.#base.child({ request_id: this.requestId }));
  }
}

/** A request's id (`req_…`), as `X-Request-Id` and error bodies show it. */
export function newRequestId(): string {
  return publicId('req');
}

/**
 * Gives every request an id (`req_…`), echoed in `X-Request-Id`, and a logger bound to it (made
 * when first used: most requests log only their one access line).
 */
export function requestContext(logger: Logger): Middleware<AppState> {
  return async (ctx, next) => {
    const requestId = newRequestId();
    ctx.state = Object.assign(new RequestState(requestId, logger), ctx.state);
    ctx.set('X-Request-Id', requestId);
    // With tracing on: the request's span names its id, and its access line the trace.
    const span = trace.getActiveSpan();
    span?.setAttribute('partner_api.request_id', requestId);
    const traceId = span?.spanContext().traceId;
    const started = process.hrtime.bigint();
    try {
      await runInRequest(requestId, next);
    } finally {
      if (logger.isLevelEnabled('info')) {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        // Paths only, never query strings or headers: they can carry signatures and key material.
        logger.info(
          { request_id: requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 100) / 100, partner_id: ctx.state.auth?.partnerId, ...(traceId ? { trace_id: traceId } : {}) },
          'request',
        );
      }
    }
  };
}
