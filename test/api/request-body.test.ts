import assert from 'node:assert/strict';
import { PassThrough, Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import type Koa from 'koa';
import { ApiError } from '../../src/api/errors';
import { rawBody } from '../../src/api/middleware/raw-body';
import type { AppState } from '../../src/api/state';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { rawRequest } from '../helpers/raw-request';

/** The middleware alone, over a request stream that misbehaves in ways a socket rarely shows on demand. */
async function readBody(req: Readable & { headers?: Record<string, string> }): Promise<unknown> {
  const ctx = { req: Object.assign(req, { headers: req.headers ?? {} }), get: () => '', state: {} } as unknown as Koa.ParameterizedContext<AppState>;
  try {
    await rawBody()(ctx, async () => undefined);
    return ctx.state.rawBody;
  } catch (err) {
    return err;
  }
}

function assertValidationError(err: unknown, issue: string) {
  assert.ok(err instanceof ApiError, `an ApiError, not ${String(err)}`);
  assert.equal(err.code, 'validation_error');
  assert.equal(err.status, 400);
  assert.deepEqual(err.details, [{ field: 'body', issue }]);
}

describe('request bodies that cannot be read are 400 validation_error, never 500', () => {
  ownTemporal();
  it('a body shorter than its Content-Length', async () => {
    const req = Object.assign(new PassThrough(), { headers: { 'content-length': '10' } });
    req.end('{"a":1}');
    assertValidationError(await readBody(req), 'length mismatch');
  });

  it('a body stream that fails while it is read (connection reset)', async () => {
    const req = Object.assign(
      new Readable({
        read() {
          this.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
        },
      }),
      { headers: { 'transfer-encoding': 'chunked' } },
    );
    assertValidationError(await readBody(req), 'unreadable');
  });

  it('a compressed body (Content-Encoding: gzip), over HTTP', async () => {
    const { client } = await newPartner();
    const path = '/api/partner/v1/quotes';
    const body = gzipSync(JSON.stringify({ domain: 'academy.com' })).toString('latin1');
    const res = await rawRequest(getStack().baseUrl, 'POST', path, { ...client.signHeaders('POST', path, Buffer.from(body, 'latin1')), 'content-type': 'application/json', 'content-encoding': 'gzip' }, body);
    assert.equal(res.status, 400, res.text);
    const error = (res.body as { error: { code: string; details: unknown } }).error;
    assert.equal(error.code, 'validation_error');
    assert.deepEqual(error.details, [{ field: 'header.content-encoding', issue: 'unsupported' }]);
  });
});
