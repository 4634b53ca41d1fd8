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
import { signRequestHeaders, type PartnerCredential } from './partner-client';

export type { paths, components, operations, webhooks } from './schema';
export { PartnerClient, signRequestHeaders, type PartnerCredential, type PartnerResponse, type CallOptions, type EventPage } from './partner-client';
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

/** A typed, signing client of the partner API. */
export function createClient(options: PartnerClientOptions): Client<paths> {
  const { keyId, secret, baseUrl, ...rest } = options;
  const client = createFetchClient<paths>({ ...rest, baseUrl });
  client.use(signingMiddleware({ keyId, secret }));
  return client;
}
