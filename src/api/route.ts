/**
 * A route is declared once: method, path, scope, schemas and handler. The router, request
 * validation and the OpenAPI document are all derived from these declarations.
 */
import type { z, ZodObject, ZodType } from 'zod';
import type { Scope } from '../auth/scopes';
import type { ErrorCode } from './errors';
import type { AuthContext } from './state';

export type HttpMethod = 'get' | 'post' | 'put' | 'delete';

export interface RouteResult<R> {
  status?: number;
  body: R;
  headers?: Record<string, string>;
}

export interface HandlerInput<Q, P, B> {
  query: Q;
  params: P;
  body: B;
  auth: AuthContext;
  headers: Record<string, string | string[] | undefined>;
  /** The query string as sent, before validation (to echo a parameter back as the partner wrote it). */
  rawQuery: Record<string, string | string[] | undefined>;
  requestId: string;
}

export interface RouteSpec<Q extends ZodObject = ZodObject, P extends ZodObject = ZodObject, B extends ZodType = ZodType, R extends ZodType = ZodType> {
  operationId: string;
  method: HttpMethod;
  /** OpenAPI-style path (`/api/partner/v1/domains/{name}`). */
  path: string;
  /** Any one of these grants the route. */
  scopes: readonly Scope[];
  summary: string;
  description?: string;
  tag: string;
  query?: Q;
  params?: P;
  body?: B;
  /** Headers the route reads besides authentication (e.g. Idempotency-Key), for the docs. */
  headers?: ZodObject;
  response: { status: number; description: string; schema: R };
  /** Contract error codes this route answers with, beyond the ones every signed route has. */
  errors: readonly ErrorCode[];
  handler: (input: HandlerInput<z.output<Q>, z.output<P>, z.output<B>>) => Promise<RouteResult<z.input<R>>>;
}

/** Keeps the handler's input typed by the route's own schemas. */
export function defineRoute<Q extends ZodObject, P extends ZodObject, B extends ZodType, R extends ZodType>(
  spec: RouteSpec<Q, P, B, R>,
): RouteSpec {
  return spec as unknown as RouteSpec;
}

/** `/domains/{name}` -> `/domains/:name` for @koa/router. */
export function toRouterPath(openApiPath: string): string {
  return openApiPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}
