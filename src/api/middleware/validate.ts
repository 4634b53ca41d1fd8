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
  // An indexed loop over an array (authenticate's pairs): V8 optimizes it, where destructuring each pair of an iterator stayed in its baseline tier.
  const list = Array.isArray(pairs) ? (pairs as Array<[string, string]>) : [...pairs];
  for (let i = 0; i < list.length; i++) {
    const name = list[i][0];
    const value = list[i][1];
    const existing = out[name];
    out[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return out;
}

/**
 * Where a NUL character sits in a request's values, if anywhere (`body.reason`, `path.id`): no
 * text column takes one (Postgres refuses it), so it is a 400 here rather than a failed write.
 */
export function nulCharacterAt(value: unknown, location: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? location : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const at = nulCharacterAt(value[i], `${location}.${i}`);
      if (at) return at;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      const at = nulCharacterAt(key, `${location}.${key}`) ?? nulCharacterAt(v, `${location}.${key}`);
      if (at) return at;
    }
  }
  return undefined;
}

/**
 * Whether a request's URL can carry a NUL at all: only percent-encoded (the HTTP parser refuses
 * a raw one), so the API's values and the buyer pages are searched or refused only then.
 */
export function urlMayHoldNul(url: string | undefined): boolean {
  return (url ?? '').includes('%00');
}

/** `?cursor=&limit=20`: a parameter sent empty counts as absent (a template filled in part). */
function withoutEmptyValues(query: Record<string, string | string[]>): Record<string, string | string[]> {
  if (!Object.values(query).includes('')) return query;
  const out: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of Object.entries(query)) if (value !== '') out[name] = value;
  return out;
}

/** `{"reason": null}`: a field of a JSON object body sent as null counts as absent (no request field takes null). */
function withoutNullFields(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null));
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
  // Not async: it waits for nothing, so it costs the request no promise of its own.
  return (ctx, next) => {
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
    const params = (ctx as unknown as { params: unknown }).params ?? {};
    // In the body a NUL can only come as a JSON escape (JSON.parse refuses a raw one), so the
    // values are searched only when the URL or the body holds one.
    const mayHoldNul = urlMayHoldNul(ctx.req.url) || raw.includes('\\u0000');
    const nul = mayHoldNul ? (nulCharacterAt(params, 'path') ?? nulCharacterAt(rawQuery, 'query') ?? nulCharacterAt(json, 'body')) : undefined;
    if (nul) throw new ApiError('validation_error', `${nul}: contains a NUL character`, [{ field: nul, issue: 'contains a NUL character' }]);
    const sent = withoutEmptyValues(rawQuery);
    const input: ValidatedInput = {
      rawQuery: sent,
      query: check(route.query, sent, 'query', problems),
      params: check(route.params, params, 'path', problems),
      body: check(route.body, withoutNullFields(json), 'body', problems),
    };
    if (problems.length) {
      throw new ApiError('validation_error', problems.map((p) => `${p.field}: ${p.issue}`).join('; '), problems);
    }
    ctx.state.input = input;
    return next();
  };
}
