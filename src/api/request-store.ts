/**
 * The request under way, for code far from Koa's context: a workflow started while handling it
 * carries its id in its memo (`request_id`, shown by the Temporal UI), and an event written in it
 * records it (`events.request_id`), so an operator goes from a partner's `X-Request-Id` to the
 * workflow and the events it caused.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const store = new AsyncLocalStorage<{ requestId: string }>();

export function runInRequest<T>(requestId: string, work: () => T): T {
  return store.run({ requestId }, work);
}

/** The id of the request being handled here, if any (undefined in the worker and in jobs). */
export function currentRequestId(): string | undefined {
  return store.getStore()?.requestId;
}
