/**
 * `call events forward URL`, like `stripe listen --forward-to`: a partner's webhook receiver on
 * its own machine, fed from GET /events with the partner's credential instead of by the service
 * (which cannot reach the partner's laptop). Each event is POSTed signed exactly as a real
 * delivery (webhookHeaders, with the partner's webhook secret), one at a time in history order.
 * A POST that fails (non-2xx, refused, no answer within 10 s) is retried with back-off until it
 * succeeds, so the receiver sees what the service would send it, in the same order.
 *
 * At least once, like the real deliveries: the position moves a page at a time, so a run stopped
 * in the middle of a page sends that page's first events again when resumed from its cursor.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { EventPage, PartnerClient } from './partner-client';
import { webhookHeaders, type WebhookEvent } from './webhooks';

export const FORWARD_TIMEOUT_MS = 10_000;
const PAGE_SIZE = 100;

/** A refusal that asking again will not change (bad credential, missing webhook scope). */
export class ForwardRefused extends Error {
  readonly name = 'ForwardRefused';
}

export interface ForwardOptions {
  client: PartnerClient;
  /** The local receiver, e.g. http://localhost:4242/hooks. */
  url: string;
  /** The webhook secret the receiver verifies with. */
  secret: string;
  /** 'now': only events recorded from now on; 'start': the whole history first; or a cursor of an earlier run. */
  from: 'now' | 'start' | { cursor: string };
  /** How long to wait before asking again once caught up. */
  pollIntervalMs?: number;
  /** Back-off between failed attempts: doubles from `initialMs` up to `maxMs`. */
  retry?: { initialMs: number; maxMs: number };
  /** Stops forwarding; forwardEvents then resolves with the position reached. */
  signal?: AbortSignal;
  /** One line per event (and per failed attempt). */
  log: (line: string) => void;
  now?: () => number;
}

/** Forwards until `signal` aborts; resolves with the cursor to resume from (undefined: the start). */
export async function forwardEvents(options: ForwardOptions): Promise<string | undefined> {
  const { log, signal } = options;
  // This loop waits out 429s and 5xx itself, for as long as it takes, and says so: the client's
  // own few retries under it would only hide the first answers.
  const client = options.client.withRetry(false);
  const pollIntervalMs = options.pollIntervalMs ?? 2000;
  const retry = options.retry ?? { initialMs: 500, maxMs: 30_000 };
  const backOff = (attempt: number) => Math.min(retry.maxMs, retry.initialMs * 2 ** (attempt - 1));

  /** One page; waits out rate limits and transient failures, gives up only on a refusal that will not change. */
  async function page(cursor: string | undefined): Promise<EventPage> {
    for (let attempt = 1; ; attempt++) {
      let wait: number;
      try {
        const res = await client.listEvents({ cursor, limit: PAGE_SIZE });
        if (res.status === 200) return res.body;
        const error = (res.body as { error?: { code?: string; message?: string } } | undefined)?.error;
        if (res.status !== 429 && res.status < 500) throw new ForwardRefused(`GET /events answered ${res.status} ${error?.code ?? ''}: ${error?.message ?? res.text}`);
        wait = res.status === 429 ? Math.max(1, Number(res.headers.get('retry-after')) || 1) * 1000 : backOff(attempt);
        log(`GET /events answered ${res.status}; asking again in ${seconds(wait)}`);
      } catch (err) {
        if (err instanceof ForwardRefused) throw err;
        wait = backOff(attempt);
        log(`GET /events failed (${failure(err)}); asking again in ${seconds(wait)}`);
      }
      await pause(wait, signal);
    }
  }

  async function forward(event: WebhookEvent): Promise<void> {
    // The body a delivery carries: exactly the event, in the service's field order.
    const body = JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, data: event.data });
    for (let attempt = 1; ; attempt++) {
      const timestamp = String(Math.floor((options.now ?? Date.now)() / 1000));
      let outcome: string;
      try {
        const res = await fetch(options.url, {
          method: 'POST',
          headers: { ...webhookHeaders(options.secret, event.id, timestamp, body), 'User-Agent': 'domain-partner-api-cli/1 (events forward)' },
          body,
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]) : AbortSignal.timeout(FORWARD_TIMEOUT_MS),
        });
        await res.arrayBuffer();
        if (res.ok) {
          log(`${event.id} ${event.type} -> ${res.status}${attempt > 1 ? ` (attempt ${attempt})` : ''}`);
          return;
        }
        outcome = `HTTP ${res.status}`;
      } catch (err) {
        if (signal?.aborted) throw err;
        outcome = (err as Error).name === 'TimeoutError' ? `no answer within ${FORWARD_TIMEOUT_MS / 1000} s` : failure(err);
      }
      const wait = backOff(attempt);
      log(`${event.id} ${event.type} -> ${outcome}; retrying in ${seconds(wait)}`);
      await pause(wait, signal);
    }
  }

  let cursor = typeof options.from === 'object' ? options.from.cursor : undefined;
  try {
    if (options.from === 'now') {
      // /events has no "latest" position: page through what exists without forwarding it.
      let skipped = 0;
      for (;;) {
        const p = await page(cursor);
        cursor = p.next_cursor;
        if (!p.data.length) break;
        skipped += p.data.length;
      }
      log(`skipped ${skipped} earlier events (--from-start replays them)`);
    }
    log(`forwarding events to ${options.url}; Ctrl-C to stop`);
    while (!signal?.aborted) {
      const p = await page(cursor);
      for (const event of p.data) await forward(event);
      cursor = p.next_cursor;
      if (!p.data.length) await pause(pollIntervalMs, signal);
    }
  } catch (err) {
    if (!signal?.aborted) throw err;
  }
  return cursor;
}

/** fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, …) is in its cause. */
function failure(err: unknown): string {
  const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 1000 ? 1 : 0)} s`;
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal });
}
