import assert from 'node:assert/strict';
import { postEvent } from '../../src/webhooks/delivery';
import { startReceiver } from '../helpers/receiver';

const EVENT = { id: 'evt_post', type: 'order.created', created_at: '2026-11-21T10:00:00Z', data: {} };

describe('one delivery attempt (postEvent)', () => {
  it('refuses at delivery time an address the live policy forbids, literal or resolved, without connecting', async () => {
    const receiver = await startReceiver();
    try {
      const port = new URL(receiver.url).port;
      for (const url of [`https://10.0.0.1:${port}/x`, `http://127.0.0.1:${port}/hooks`, `http://localhost:${port}/hooks`]) {
        const result = await postEvent(url, 'secret-secret-secret', EVENT, 'live');
        assert.equal(result.ok, false, url);
        assert.match(result.error ?? '', /refused/, url);
      }
      assert.equal(receiver.received.length, 0, 'nothing reached the receiver');
      assert.equal((await postEvent(`http://localhost:${port}/hooks`, 'secret-secret-secret', EVENT, 'sandbox')).ok, true, 'sandbox may deliver to loopback');
    } finally {
      await receiver.close();
    }
  });

  it('no answer within 10 s is a failed attempt', async function () {
    this.timeout(30_000);
    const receiver = await startReceiver(() => 'hang');
    try {
      const started = Date.now();
      const result = await postEvent(receiver.url, 'secret-secret-secret', EVENT, 'sandbox');
      const took = Date.now() - started;
      assert.equal(result.ok, false);
      assert.match(result.error ?? '', /10 s/);
      assert.ok(took >= 9_900 && took < 15_000, `gave up after ${took} ms`);
    } finally {
      await receiver.close();
    }
  });

  it('a non-2xx status and a refused connection are failed attempts', async () => {
    const receiver = await startReceiver(() => 404);
    try {
      assert.deepEqual(await postEvent(receiver.url, 'secret-secret-secret', EVENT, 'sandbox'), { ok: false, status: 404, error: 'HTTP 404' });
    } finally {
      await receiver.close();
    }
    const refused = await postEvent(receiver.url, 'secret-secret-secret', EVENT, 'sandbox');
    assert.equal(refused.ok, false);
    assert.match(refused.error ?? '', /ECONNREFUSED/);
  });
});
