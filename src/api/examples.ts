/**
 * The reference's response examples (CONTRACT §14, "examples that were produced by a real
 * request"): the first successful answer of each operation that the test suite's real requests
 * received, recorded by `EXAMPLES_WRITE=1 npm test` into examples.json (test/helpers/examples.ts)
 * and checked against each route's response schema on every run (test/api/openapi.test.ts), so
 * an example never drifts from what the API answers.
 */
import recorded from './examples.json';

export interface ResponseExample {
  status: number;
  body: unknown;
}

export const RESPONSE_EXAMPLES = recorded as Record<string, ResponseExample>;

/** An answer as an example: lists cut to their first two items, so the reference stays readable. */
export function asExample(body: unknown): unknown {
  if (Array.isArray(body)) return body.slice(0, 2).map(asExample);
  if (body && typeof body === 'object') return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, asExample(v)]));
  return body;
}
