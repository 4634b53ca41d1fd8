/** The OpenAPI 3.1 document, generated from the route table: it describes exactly what exists. */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { ERROR_STATUS, type ErrorCode } from './errors';
import type { RouteSpec } from './route';
import { ErrorBody, z } from './schemas';

const AUTH_ERRORS: ErrorCode[] = ['missing_credentials', 'invalid_signature', 'forbidden', 'rate_limited', 'internal_error', 'service_unavailable'];

const SIGNING_DESCRIPTION = `Every /api/partner request is signed (CONTRACT §1): send X-Service-Key-Id, X-Service-Timestamp
(Unix seconds), X-Service-Nonce (UUID v4, new per request) and X-Service-Signature: v1=<hex HMAC-SHA256 of the
canonical string, keyed with the credential's secret>. The canonical string is eight lines joined by "\\n":
v1, key id, timestamp, nonce, upper-case method, path without query, canonical query (RFC 3986-encoded
name=value pairs sorted by name then value, joined by "&"; "+" in a query string means a space), and the hex
SHA-256 of the raw body (of the empty string when there is none). See the README for a worked example.`;

export interface PublicRoute {
  method: 'get';
  path: string;
  summary: string;
  tag: string;
}

export function buildOpenApiDocument(routes: RouteSpec[], publicRoutes: PublicRoute[], serverUrl?: string) {
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
  const requestIdHeader = z.object({ 'X-Request-Id': z.string().openapi({ description: 'equals error.request_id on errors' }) });

  for (const route of routes) {
    const errorCodes = [...new Set<ErrorCode>([...route.errors, ...AUTH_ERRORS])];
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of errorCodes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
    const responses: Record<string, { description: string; headers?: typeof requestIdHeader; content?: { 'application/json': { schema: typeof ErrorBody } } }> = {};
    responses[String(route.response.status)] = {
      description: route.response.description,
      headers: requestIdHeader,
      content: { 'application/json': { schema: route.response.schema as typeof ErrorBody } },
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
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Domain marketplace partner API',
      version: '1.0.0',
      description: 'Search, quote and sell listed domains, hosted checkout, brokerage, reconciliation, referral and signed webhooks. Errors always have the Error shape; an unknown path is 404 not_found, a method the path does not have 405 method_not_allowed with an Allow header; lists take limit (1–100, default 20) and cursor. A query parameter sent empty, or a body field sent as null, counts as absent; a NUL character in any value is 400 validation_error. Routes for merchants of record or affiliates check the partner right after the scope, before the body.',
    },
    servers: serverUrl ? [{ url: serverUrl }] : [],
  });
}
