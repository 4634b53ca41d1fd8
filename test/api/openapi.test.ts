import assert from 'node:assert/strict';
import { partnerRoutes } from '../../src/api/app';
import { RESPONSE_EXAMPLES } from '../../src/api/examples';
import { getStack } from '../helpers/stack';

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1, served unsigned, and describes every route that exists', async () => {
    const res = await fetch(`${getStack().baseUrl}/api/partner/v1/openapi.json`);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, { 'x-required-scopes'?: string[]; responses: Record<string, unknown> }>> };
    assert.equal(doc.openapi, '3.1.0');
    const routes = partnerRoutes(getStack().appDeps);
    for (const route of routes) {
      const op = doc.paths[route.path]?.[route.method];
      assert.ok(op, `${route.method} ${route.path} documented`);
      assert.deepEqual(op['x-required-scopes'], route.scopes);
      for (const status of ['401', '403', '429', '500']) assert.ok(op.responses[status], `${route.path} documents ${status}`);
    }
    for (const path of ['/healthz', '/readyz', '/api/partner/v1/openapi.json', '/api/partner/v1/quote-keys']) assert.ok(doc.paths[path], path);
    assert.equal(Object.keys(doc.paths).length, new Set(routes.map((r) => r.path)).size + 4, 'nothing documented that does not exist');
  });
});

describe('the reference’s response examples (src/api/examples.json)', () => {
  it('every operation has one, recorded from a real answer, and each still fits its route’s response schema', () => {
    const routes = partnerRoutes(getStack().appDeps);
    const missing: string[] = [];
    const stale: string[] = [];
    for (const route of routes) {
      const example = RESPONSE_EXAMPLES[route.operationId];
      if (!example) {
        missing.push(route.operationId);
        continue;
      }
      const parsed = route.response.schema.safeParse(example.body);
      if (!parsed.success) stale.push(`${route.operationId}: ${parsed.error.message.slice(0, 300)}`);
    }
    assert.deepEqual(stale, [], 'an example no longer fits its schema: EXAMPLES_WRITE=1 npm test records them again');
    assert.deepEqual(missing, [], 'no test makes a successful request to these: add one, then EXAMPLES_WRITE=1 npm test');
  });
});
