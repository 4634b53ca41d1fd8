/**
 * The partner API's TypeScript SDK (CONTRACT §14).
 *
 * - `createClient({ baseUrl, keyId, secret })`: a typed client over the OpenAPI document
 *   (openapi-fetch: `GET`/`POST`/`PUT` take a path of the document and typed `params`/`body`),
 *   signing every request (CONTRACT §1) in a middleware.
 * - `verifyWebhook({ secret, headers, body })`: accepts a genuine delivery (the spec's
 *   X-Service-Signature, or the Standard Webhooks headers with a `whsec_` secret) and throws
 *   WebhookVerificationError on any other.
 * - `PartnerClient`, the untyped signed client the `partner-api` command line uses.
 *
 * The types (`paths`, `components`) are generated from the OpenAPI document by openapi-typescript
 * (src/schema.ts, never edited by hand; the server's suite fails when they differ from the
 * document it serves).
 */
import createFetchClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch';
import type { paths } from './schema';
import { DEFAULT_RETRY, retryAfter, signRequestHeaders, type PartnerCredential, type RetryPolicy } from './partner-client';

export type { paths, components, operations, webhooks } from './schema';
export { PartnerClient, signRequestHeaders, DEFAULT_RETRY, type RetryPolicy, type PartnerCredential, type PartnerResponse, type CallOptions, type EventPage } from './partner-client';
export { verifyWebhook, signWebhook, webhookHeaders, generateWebhookSecret, WebhookVerificationError, WEBHOOK_TOLERANCE_SECONDS, type WebhookEvent } from './webhooks';
export { canonicalString, signatureHeader, type SignedParts } from './signing';
export { forwardEvents } from './forward-events';

export interface PartnerClientOptions extends PartnerCredential, Omit<ClientOptions, 'baseUrl'> {
  /** The API's origin, e.g. `https://partners.example.com` (paths carry `/api/partner/…`). */
  baseUrl: string;
}

/** Signs each request with the credential, over exactly the path, query and body sent. */
export function signingMiddleware(credential: PartnerCredential): Middleware {
  return {
    async onRequest({ request }) {
      const url = new URL(request.url);
      const body = request.body ? Buffer.from(await request.clone().arrayBuffer()) : '';
      for (const [name, value] of Object.entries(signRequestHeaders(credential, request.method, `${url.pathname}${url.search}`, body))) request.headers.set(name, value);
      return request;
    },
  };
}

/**
 * Sends again, signed anew, a 429 or 503 answer that asks for it (RetryPolicy: after its
 * Retry-After; a POST's 503 only with an Idempotency-Key), up to `policy.attempts` times.
 */
export function retryingMiddleware(credential: PartnerCredential, policy: RetryPolicy = DEFAULT_RETRY, send: (request: Request) => Promise<Response> = (request) => globalThis.fetch(request)): Middleware {
  const bodies = new WeakMap<Request, ArrayBuffer | undefined>();
  return {
    async onRequest({ request }) {
      bodies.set(request, request.body ? await request.clone().arrayBuffer() : undefined);
      return request;
    },
    async onResponse({ request, response }) {
      const body = bodies.get(request);
      let answer = response;
      for (let attempt = 0; attempt < policy.attempts; attempt++) {
        const wait = retryAfter(request.method, request.headers.has('idempotency-key'), answer.status, answer.headers, policy);
        if (wait === undefined) break;
        await new Promise((r) => setTimeout(r, wait * 1000));
        const again = new Request(request.url, { method: request.method, headers: request.headers, body });
        const url = new URL(again.url);
        for (const [name, value] of Object.entries(signRequestHeaders(credential, again.method, `${url.pathname}${url.search}`, body ? Buffer.from(body) : ''))) again.headers.set(name, value);
        answer = await send(again);
      }
      return answer;
    },
  };
}

export interface RetryOption {
  /** How 429 and 503 answers are sent again (default: DEFAULT_RETRY); `false`: never. */
  retry?: RetryPolicy | false;
}

/** A typed, signing client of the partner API; it signs again and resends 429 and 503 answers that ask for it. */
export function createClient(options: PartnerClientOptions & RetryOption): Client<paths> {
  const { keyId, secret, baseUrl, retry, ...rest } = options;
  const client = createFetchClient<paths>({ ...rest, baseUrl });
  // Signing runs last before the request goes and first on its answer: a resend is signed anew.
  if (retry !== false) client.use(retryingMiddleware({ keyId, secret }, retry ?? DEFAULT_RETRY, rest.fetch ?? globalThis.fetch));
  client.use(signingMiddleware({ keyId, secret }));
  return client;
}
