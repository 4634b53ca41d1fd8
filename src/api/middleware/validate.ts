import type { Middleware } from 'koa';
import type { ZodError, ZodType } from 'zod';
import { ApiError, type FieldIssue } from '../errors';
import type { RouteSpec } from '../route';
import type { AppState } from '../state';

function issues(error: ZodError, location: string): FieldIssue[] {
  return error.issues.map((i) => ({ field: [location, ...i.path.map(String)].join('.'), issue: i.message }));
}

function check<T>(schema: ZodType<T> | undefined, value: unknown, location: string, into: FieldIssue[]): T | undefined {
  if (!schema) return undefined;
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  into.push(...issues(parsed.error, location));
  return undefined;
}

/** The query as partners sign it: URLSearchParams semantics, a repeated name becomes an array. */
export function queryObject(pairs: Iterable<[string, string]>): Record<string, string | string[]> {
  // No prototype: a name such as `__proto__` or `toString` is a name like any other.
  const out: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of pairs) {
    const existing = out[name];
    out[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return out;
}

export interface ValidatedInput {
  /** The query's names and values as sent (before the schema): the routes that echo them read this. */
  rawQuery: Record<string, string | string[]>;
  query: unknown;
  params: unknown;
  body: unknown;
}

/** Parses the JSON body and checks query, path and body against the route's schemas. */
export function validate(route: RouteSpec): Middleware<AppState & { input?: ValidatedInput }> {
  return async (ctx, next) => {
    const raw = ctx.state.rawBody ?? Buffer.alloc(0);
    let json: unknown = undefined;
    if (raw.length > 0) {
      try {
        json = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new ApiError('validation_error', 'the request body is not valid JSON', [{ field: 'body', issue: 'malformed JSON' }]);
      }
    }
    if (route.body && raw.length === 0) {
      throw new ApiError('validation_error', 'a JSON body is required', [{ field: 'body', issue: 'missing' }]);
    }
    const problems: FieldIssue[] = [];
    const rawQuery = (ctx.state.rawQuery ??= queryObject(ctx.state.queryPairs ?? new URLSearchParams(ctx.querystring)));
    const input: ValidatedInput = {
      rawQuery,
      query: check(route.query, rawQuery, 'query', problems),
      params: check(route.params, (ctx as unknown as { params: unknown }).params ?? {}, 'path', problems),
      body: check(route.body, json, 'body', problems),
    };
    if (problems.length) {
      throw new ApiError('validation_error', problems.map((p) => `${p.field}: ${p.issue}`).join('; '), problems);
    }
    ctx.state.input = input;
    await next();
  };
}
