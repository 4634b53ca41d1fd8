/**
 * What a Koa application meets outside its middleware's try/catch: a client that went away
 * before its answer was written (EPIPE, ECONNRESET), or an error thrown above the error mapping.
 * Koa's default prints each stack to stderr; these go to the process's own log instead, a client
 * gone as a debug line (nothing is wrong with the service).
 */
import type { EventEmitter } from 'node:events';

const CLIENT_GONE = new Set(['EPIPE', 'ECONNRESET', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);

/** `app`: a Koa application (an EventEmitter of its `error`s). */
export function logAnswerErrors(app: EventEmitter, log: (err: Error, clientGone: boolean) => void): void {
  app.on('error', (err: Error & { code?: string }) => log(err, CLIENT_GONE.has(err.code ?? '')));
}
