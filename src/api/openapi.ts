/** The OpenAPI 3.1 document, generated from the route table: it describes exactly what exists. */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { ERROR_STATUS, type ErrorCode } from './errors';
import type { RouteSpec } from './route';
import { ErrorBody, z } from './schemas';
import { asExample, type ResponseExample } from './examples';
import { canonicalString, queryPairs, signatureHeader } from '../auth/signing';

const AUTH_ERRORS: ErrorCode[] = ['missing_credentials', 'invalid_signature', 'forbidden', 'rate_limited', 'internal_error', 'service_unavailable'];

const SIGNING_DESCRIPTION = `Every /api/partner request is signed (CONTRACT §1): send X-Service-Key-Id, X-Service-Timestamp
(Unix seconds), X-Service-Nonce (UUID v4, new per request) and X-Service-Signature: v1=<hex HMAC-SHA256 of the
canonical string, keyed with the credential's secret>. The canonical string is eight lines joined by "\\n":
v1, key id, timestamp, nonce, upper-case method, path without query, canonical query (RFC 3986-encoded
name=value pairs sorted by name then value, joined by "&"; "+" in a query string means a space), and the hex
SHA-256 of the raw body (of the empty string when there is none). The reference's opening section has a worked example.`;

/** The worked example of the signing guide, computed by the signing code itself (docs/partners/signing.md has the same values). */
const EXAMPLE = {
  keyId: 'pk_test_3f9a1c2b7d4e5f60a1b2c3d4',
  secret: 'sk_test_5e8d2f1a9c7b3e6d4a2f8c1b7e9d3a5f6c2b8e4d1a7f3c9b5e2d8a6f4c1b7e9d',
  timestamp: '1795000000',
  nonce: '0b7e3c1a-5d2f-4e8a-9c6b-1f2e3d4c5b6a',
  method: 'GET',
  path: '/api/partner/v1/domains/search',
  rawQuery: 'q=coffee+shop&limit=5',
};

/** The reference's opening sections (Redoc shows each heading in its side menu). */
function guide(): string {
  const parts = { ...EXAMPLE, query: queryPairs(EXAMPLE.rawQuery), body: '' };
  return `Search, quote and sell listed domains, hosted checkout, brokerage, reconciliation, referral and signed webhooks.

# Signing requests

Every \`/api/partner\` request is signed with the credential's key id and secret. Send four headers:

| Header | Value |
| --- | --- |
| \`X-Service-Key-Id\` | the key id (\`pk_test_…\` in sandbox, \`pk_live_…\` in live) |
| \`X-Service-Timestamp\` | Unix seconds; within 300 s of the server's clock |
| \`X-Service-Nonce\` | a new UUID v4 for every request (a nonce is accepted once) |
| \`X-Service-Signature\` | \`v1=\` and the lower-case hex HMAC-SHA256 of the canonical string, keyed with the secret |

The canonical string is eight lines joined by \`\\n\`: \`v1\`, the key id, the timestamp, the nonce, the
upper-case method, the path without its query, the canonical query (each name and value RFC 3986
encoded, pairs sorted by name then value, joined by \`&\`; \`+\` in a query string is a space), and
the hex SHA-256 of the raw body (of the empty string when there is none).

## A worked example

Computed by the service's own signing code:

\`\`\`text
key id:     ${EXAMPLE.keyId}
secret:     ${EXAMPLE.secret}
timestamp:  ${EXAMPLE.timestamp}
nonce:      ${EXAMPLE.nonce}
request:    ${EXAMPLE.method} ${EXAMPLE.path}?${EXAMPLE.rawQuery}
body:       (empty)

canonical string:
${canonicalString(parts)}

X-Service-Signature: ${signatureHeader(EXAMPLE.secret, parts)}
\`\`\`

Outcomes, in this order: no key id is 401 \`missing_credentials\`; an unknown or revoked key, a bad or
skewed timestamp, a bad or reused nonce, or a wrong signature is 401 \`invalid_signature\` (the
message says which); a credential without the route's scope is 403 \`forbidden\`; over the rate
limit is 429 \`rate_limited\` with \`Retry-After\`. Only an admitted request uses up its nonce.

# Errors

Every error answer has one shape, \`{ "error": { "code", "message", "request_id", "doc_url" } }\`,
with \`details\` (each field and its issue) on \`validation_error\`. \`doc_url\` links to
[the code's entry on the errors page](/docs/errors), which says what each code means and what to do.
An unknown path is 404 \`not_found\`; a method the path lacks is 405 \`method_not_allowed\` with
\`Allow\`. Lists take \`limit\` (1–100, default 20) and \`cursor\`. A query parameter sent empty, or a
body field sent as null, counts as absent; a NUL character in any value is 400 \`validation_error\`.
Routes for merchants of record or affiliates check the partner right after the scope.

# Webhooks

Register one endpoint per environment with \`PUT /api/partner/webhooks\`; leave \`secret\` out and a
Standard Webhooks secret (\`whsec_…\`) is generated and answered once. Each delivery is a POST of the
event as JSON (the \`webhooks\` section lists every type and its payload) with
\`X-Service-Event-Id\`, \`X-Service-Timestamp\` and \`X-Service-Signature: v1=<hex HMAC-SHA256 keyed with
the secret's text over "<timestamp>.<raw body>">\`; with a \`whsec_\` secret also \`webhook-id\`,
\`webhook-timestamp\` and \`webhook-signature\`, which any Standard Webhooks library verifies. A new
secret leaves the previous one signing too for 24 hours. Verify on the raw body, reject timestamps
more than 5 minutes away, and deduplicate on the event id: an event can arrive twice, and every
event stays readable, in order, through \`GET /api/partner/v1/events\`.`;
}

export interface PublicRoute {
  method: 'get';
  path: string;
  summary: string;
  tag: string;
}

/** One event type of the `webhooks` section: what a delivery of it carries. */
export interface WebhookSpec {
  type: string;
  description: string;
  data: z.ZodType;
}

const DELIVERY_HEADERS = z.object({
  'X-Service-Event-Id': z.string().openapi({ description: 'the event id (equals the body\'s `id`): deduplicate on it, a delivery can come twice' }),
  'X-Service-Timestamp': z.string().openapi({ description: 'Unix seconds of this attempt' }),
  'X-Service-Signature': z.string().openapi({ description: 'v1=<hex HMAC-SHA256 keyed with the endpoint secret\'s text over "<timestamp>.<raw body>">' }),
  'webhook-id': z.string().optional().openapi({ description: 'Standard Webhooks (with a whsec_ secret): the event id' }),
  'webhook-timestamp': z.string().optional().openapi({ description: 'Standard Webhooks: Unix seconds of this attempt' }),
  'webhook-signature': z.string().optional().openapi({ description: 'Standard Webhooks: space-separated v1,<base64 HMAC-SHA256 keyed with the base64-decoded part after whsec_ over "<id>.<timestamp>.<raw body>">; two during a secret rotation' }),
});

export function buildOpenApiDocument(routes: RouteSpec[], publicRoutes: PublicRoute[], serverUrl?: string, webhooks: WebhookSpec[] = [], examples: Record<string, ResponseExample> = {}) {
  const registry = new OpenAPIRegistry();
  registry.register('Error', ErrorBody);
  for (const name of ['KeyId', 'Timestamp', 'Nonce', 'Signature'] as const) {
    registry.registerComponent('securitySchemes', name, {
      type: 'apiKey',
      in: 'header',
      name: `X-Service-${name === 'KeyId' ? 'Key-Id' : name}`,
      description: SIGNING_DESCRIPTION,
    });
  }
  const requestIdHeader = z.object({
    'X-Request-Id': z.string().openapi({ description: 'equals error.request_id on errors' }),
    'RateLimit-Policy': z.string().optional().openapi({ description: "the credential's rate limit (IETF httpapi draft): q requests per w seconds of burst, refilled at q/w a second", example: '"credential";q=50;w=2' }),
    RateLimit: z.string().optional().openapi({ description: 'what is left of it after this request (r) and the seconds until it is full again (t); on every answer to an admitted or rate-limited request', example: '"credential";r=49;t=1' }),
  });

  for (const route of routes) {
    const errorCodes = [...new Set<ErrorCode>([...route.errors, ...AUTH_ERRORS])];
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of errorCodes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
    const responses: Record<string, { description: string; headers?: typeof requestIdHeader; content?: { 'application/json': { schema: typeof ErrorBody; example?: unknown } } }> = {};
    // An answer a real request received (src/api/examples.ts), when the suite recorded one.
    const example = examples[route.operationId];
    responses[String(route.response.status)] = {
      description: route.response.description,
      headers: requestIdHeader,
      content: { 'application/json': { schema: route.response.schema as typeof ErrorBody, ...(example && example.status === route.response.status ? { example: asExample(example.body) } : {}) } },
    };
    for (const [status, codes] of [...byStatus.entries()].sort(([a], [b]) => a - b)) {
      responses[String(status)] = {
        description: `error code: ${codes.join(' | ')}`,
        headers: requestIdHeader,
        content: { 'application/json': { schema: ErrorBody } },
      };
    }
    registry.registerPath({
      operationId: route.operationId,
      method: route.method,
      path: route.path,
      summary: route.summary,
      description: [route.description, `Scope: ${route.scopes.join(' or ')}.`].filter(Boolean).join('\n\n'),
      tags: [route.tag],
      security: [{ KeyId: [], Timestamp: [], Nonce: [], Signature: [] }],
      'x-required-scopes': route.scopes,
      request: {
        query: route.query,
        params: route.params,
        headers: route.headers,
        body: route.body ? { required: true, content: { 'application/json': { schema: route.body } } } : undefined,
      },
      responses,
    } as Parameters<typeof registry.registerPath>[0]);
  }
  for (const route of publicRoutes) {
    registry.registerPath({
      method: route.method,
      path: route.path,
      summary: route.summary,
      tags: [route.tag],
      security: [],
      responses: { 200: { description: 'OK' }, 503: { description: 'not ready', content: { 'application/json': { schema: ErrorBody } } } },
    });
  }
  for (const webhook of webhooks) {
    registry.registerWebhook({
      method: 'post',
      path: webhook.type,
      operationId: `event_${webhook.type.replace(/\./g, '_')}`,
      summary: webhook.type,
      description: `${webhook.description}\n\nPOSTed to the endpoint registered with PUT /api/partner/webhooks, as JSON. Any 2xx within 10 s is delivered; anything else is retried with back-off for 3 days. Every event also stays in GET /api/partner/v1/events.`,
      tags: ['Webhooks'],
      request: {
        headers: DELIVERY_HEADERS,
        body: {
          required: true,
          content: {
            'application/json': {
              schema: z.object({ id: z.string().openapi({ example: 'evt_3f9a1c2b7d4e5f60a1b2c3d4' }), type: z.literal(webhook.type), created_at: z.string().openapi({ format: 'date-time' }), data: webhook.data }),
            },
          },
        },
      },
      responses: { 200: { description: 'any 2xx: delivered' } },
    });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Domain marketplace partner API',
      version: '1.0.0',
      description: guide(),
    },
    servers: serverUrl ? [{ url: serverUrl }] : [],
  });
}
