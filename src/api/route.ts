/**
 * A route is declared once: method, path, scope, schemas and handler. The router, request
 * validation and the OpenAPI document are all derived from these declarations.
 */
import type { z, ZodObject, ZodType } from 'zod';
import type { Scope } from '../auth/scopes';
import type { ErrorCode } from './errors';
import type { Environment } from '../config';
import type { AuthContext } from './state';

export type HttpMethod = 'get' | 'post' | 'put' | 'delete';

export interface RouteResult<R> {
  status?: number;
  body: R;
  headers?: Record<string, string>;
}

export interface HandlerInput<Q, P, B, C = undefined> {
  /** What the route's `precondition` answered (undefined without one). */
  checked: C;
  query: Q;
  params: P;
  body: B;
  auth: AuthContext;
  headers: Record<string, string | string[] | undefined>;
  /** The query string as sent, before validation (to echo a parameter back as the partner wrote it). */
  rawQuery: Record<string, string | string[] | undefined>;
  requestId: string;
  /** The row of the route's `admittedRead` (null: no row), when admission made it; undefined otherwise. */
  admittedRead?: Record<string, unknown> | null;
}

/**
 * One read a route's handler needs, made in admission's database round trip (the signed hot
 * path: availability and pricing), so the request costs one round trip instead of two.
 */
export interface AdmittedRead {
  /** Names the combined prepared statement; unique among routes. */
  name: string;
  /**
   * A SELECT of at most one row, over its own parameters `$1`, `$2`, …; no column named `outcome`
   * or `retry_after_seconds`. Each parameter reaches it as text (batches pass them as text
   * arrays): compare with text columns or cast (`$2::int`); `$n` must not appear inside a literal.
   */
  sql: string;
  /** Its parameters (never null) from the request as sent (validation comes after authentication), or undefined to skip it. */
  params: (request: { query: Record<string, unknown>; environment: Environment }) => unknown[] | undefined;
}

export interface RouteSpec<Q extends ZodObject = ZodObject, P extends ZodObject = ZodObject, B extends ZodType = ZodType, R extends ZodType = ZodType, C = unknown> {
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
  admittedRead?: AdmittedRead;
  /**
   * A check of the partner itself (merchant of record, affiliate account), made right after the
   * scope and before the query, headers or body are looked at, so that a partner the route is
   * not for hears so whatever it sent (CONTRACT §8). What it answers reaches the handler as `checked`.
   */
  precondition?: (auth: AuthContext) => Promise<C>;
  handler: (input: HandlerInput<z.output<Q>, z.output<P>, z.output<B>, C>) => Promise<RouteResult<z.input<R>>>;
}

/** Keeps the handler's input typed by the route's own schemas. */
export function defineRoute<Q extends ZodObject, P extends ZodObject, B extends ZodType, R extends ZodType, C = undefined>(
  spec: RouteSpec<Q, P, B, R, C>,
): RouteSpec {
  return spec as unknown as RouteSpec;
}

/** `/domains/{name}` -> `/domains/:name` for @koa/router. */
export function toRouterPath(openApiPath: string): string {
  return openApiPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}
