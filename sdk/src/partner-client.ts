/**
 * A small signed client for the partner API, for partners' code, the `partner-api call` command
 * line and the server's tests. It signs exactly what it sends, with the SDK's signing module, as
 * the typed client (index.ts) does: signRequestHeaders is the one place either signs.
 */
import { randomUUID } from 'node:crypto';
import { HEADER, queryPairs, signatureHeader } from './signing';
import type { WebhookEvent } from './webhooks';

export interface PartnerCredential {
  keyId: string;
  secret: string;
}

export interface CallOptions {
  /** JSON-serialisable body, or a raw string/Buffer sent as it is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Override parts of the signature, for tests of the server's checks. */
  timestamp?: string;
  nonce?: string;
  /** Gives up (rejects with a TimeoutError) when no answer came within this many ms. */
  timeoutMs?: number;
}

/**
 * How the clients send again, signed anew, an answer that asks for it: 429 (rate limited) and 503
 * (a part of the service restarting, or the replay store restarted: "sign it again"), after the
 * answer's Retry-After. A 503 of a POST is sent again only with an Idempotency-Key (whether it was
 * acted on cannot be known otherwise); an answer asking to wait longer than `maxWaitSeconds`
 * (a quota's hour, say) is returned as it is.
 */
export interface RetryPolicy {
  /** Sends after the first, at most (default 3). */
  attempts: number;
  /** The longest Retry-After waited for (default 10 s). */
  maxWaitSeconds: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, maxWaitSeconds: 10 };

/** The seconds to wait before sending again, or undefined when the answer is final. */
export function retryAfter(method: string, hasIdempotencyKey: boolean, status: number, headers: Headers, policy: RetryPolicy): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  if (status === 503 && !['GET', 'HEAD', 'PUT', 'DELETE'].includes(method.toUpperCase()) && !hasIdempotencyKey) return undefined;
  const seconds = Number(headers.get('retry-after') ?? '1');
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > policy.maxWaitSeconds) return undefined;
  return seconds;
}

const hasKey = (headers: Record<string, string> | Headers | undefined) =>
  headers instanceof Headers ? headers.has('idempotency-key') : Object.keys(headers ?? {}).some((h) => h.toLowerCase() === 'idempotency-key');

export interface PartnerResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A page of GET /events: `next_cursor` is never null (CONTRACT §7). */
export interface EventPage {
  data: WebhookEvent[];
  next_cursor: string;
}

/**
 * The four headers that sign a request of `method` to `pathAndQuery` (e.g.
 * `/api/partner/v1/pricing?domain=a.com`) with `body` (CONTRACT §1).
 */
export function signRequestHeaders(
  credential: PartnerCredential,
  method: string,
  pathAndQuery: string,
  body: Buffer | string = '',
  overrides: Pick<CallOptions, 'timestamp' | 'nonce'> = {},
  now: number = Date.now(),
): Record<string, string> {
  const q = pathAndQuery.indexOf('?');
  const path = q === -1 ? pathAndQuery : pathAndQuery.slice(0, q);
  const timestamp = overrides.timestamp ?? String(Math.floor(now / 1000));
  const nonce = overrides.nonce ?? randomUUID();
  const signature = signatureHeader(credential.secret, {
    keyId: credential.keyId,
    timestamp,
    nonce,
    method: method.toUpperCase(),
    path,
    query: queryPairs(q === -1 ? '' : pathAndQuery.slice(q + 1)),
    body,
  });
  return {
    'X-Service-Key-Id': credential.keyId,
    'X-Service-Timestamp': timestamp,
    'X-Service-Nonce': nonce,
    'X-Service-Signature': signature,
  };
}

export class PartnerClient {
  /**
   * `retry`: how 429 and 503 answers are sent again, signed anew (RetryPolicy); `false` returns
   * every answer as it comes (the server's own tests of those answers).
   */
  constructor(
    readonly baseUrl: string,
    readonly credential: PartnerCredential,
    private readonly clock: () => number = Date.now,
    private readonly retry: RetryPolicy | false = DEFAULT_RETRY,
  ) {}

  /** The same client with another retry policy (`false`: every answer as it comes), for a caller with a retry loop of its own. */
  withRetry(retry: RetryPolicy | false): PartnerClient {
    // The caller's own class (a subclass keeps what it adds).
    return new (this.constructor as new (...args: ConstructorParameters<typeof PartnerClient>) => PartnerClient)(this.baseUrl, this.credential, this.clock, retry);
  }

  /** The headers that sign a request of `method` to `pathAndQuery` (e.g. `/api/partner/v1/pricing?domain=a.com`). */
  signHeaders(method: string, pathAndQuery: string, body: Buffer | string = '', overrides: Pick<CallOptions, 'timestamp' | 'nonce'> = {}): Record<string, string> {
    return signRequestHeaders(this.credential, method, pathAndQuery, body, overrides, this.clock());
  }

  async request<T = unknown>(method: string, pathAndQuery: string, options: CallOptions = {}): Promise<PartnerResponse<T>> {
    // A fixed timestamp or nonce is a test of the server's checks: sent once, as given.
    const policy = this.retry && options.timestamp === undefined && options.nonce === undefined ? this.retry : undefined;
    for (let attempt = 0; ; attempt++) {
      const answer = await this.send<T>(method, pathAndQuery, options);
      const wait = policy && attempt < policy.attempts ? retryAfter(method, hasKey(options.headers), answer.status, answer.headers, policy) : undefined;
      if (wait === undefined) return answer;
      await new Promise((r) => setTimeout(r, wait * 1000));
    }
  }

  private async send<T>(method: string, pathAndQuery: string, options: CallOptions): Promise<PartnerResponse<T>> {
    const upper = method.toUpperCase();
    const body =
      options.body === undefined ? '' : typeof options.body === 'string' || Buffer.isBuffer(options.body) ? options.body : JSON.stringify(options.body);
    const headers: Record<string, string> = {
      ...this.signHeaders(upper, pathAndQuery, body, options),
      ...(body.length ? { 'Content-Type': 'application/json' } : {}),
      ...options.headers,
    };
    const response = await fetch(new URL(pathAndQuery, this.baseUrl), {
      method: upper,
      headers,
      body: body.length ? (typeof body === 'string' ? body : new Uint8Array(body)) : undefined,
      ...(options.timeoutMs ? { signal: AbortSignal.timeout(options.timeoutMs) } : {}),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  get<T = unknown>(pathAndQuery: string, options?: CallOptions) {
    return this.request<T>('GET', pathAndQuery, options);
  }

  post<T = unknown>(pathAndQuery: string, body: unknown, options: CallOptions = {}) {
    return this.request<T>('POST', pathAndQuery, { ...options, body });
  }

  /** The events after `cursor` (from the start without one), oldest first. */
  listEvents(page: { cursor?: string; limit?: number } = {}) {
    const query = new URLSearchParams();
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.cursor !== undefined) query.set('cursor', page.cursor);
    return this.get<EventPage>(`/api/partner/v1/events${query.size ? `?${query}` : ''}`);
  }
}

export { HEADER };
