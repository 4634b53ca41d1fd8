import assert from 'node:assert/strict';
import { partnerRoutes } from '../../src/api/app';
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
