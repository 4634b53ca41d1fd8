import assert from 'node:assert/strict';
import { DELIVERY_TIMEOUT_MS, postEvent } from '../../src/webhooks/delivery';
import { startReceiver } from '../helpers/receiver';

const EVENT = { id: 'evt_post', type: 'order.created', created_at: '2026-11-21T10:00:00Z', data: {} };
const LIVE = { environment: 'live', allowLoopback: true } as const;
const SANDBOX = { environment: 'sandbox', allowLoopback: true } as const;
const SANDBOX_NO_LOOPBACK = { environment: 'sandbox', allowLoopback: false } as const;

describe('one delivery attempt (postEvent)', () => {
  it('refuses at delivery time an address the live policy forbids, literal or resolved, without connecting', async () => {
    const receiver = await startReceiver();
    try {
      const port = new URL(receiver.url).port;
      for (const url of [`https://10.0.0.1:${port}/x`, `http://127.0.0.1:${port}/hooks`, `http://localhost:${port}/hooks`]) {
        const result = await postEvent(url, 'secret-secret-secret', EVENT, LIVE);
        assert.equal(result.ok, false, url);
        assert.match(result.error ?? '', /refused/, url);
      }
      assert.equal(receiver.received.length, 0, 'nothing reached the receiver');
      assert.equal((await postEvent(`http://localhost:${port}/hooks`, 'secret-secret-secret', EVENT, SANDBOX)).ok, true, 'sandbox may deliver to loopback when allowed');
    } finally {
      await receiver.close();
    }
  });

  it('with WEBHOOK_ALLOW_LOOPBACK off, a sandbox delivery to a name resolving to 127.0.0.1 is refused without connecting', async () => {
    const receiver = await startReceiver();
    try {
      const port = new URL(receiver.url).port;
      for (const url of [`http://localhost:${port}/hooks`, `http://127.0.0.1:${port}/hooks`]) {
        const result = await postEvent(url, 'secret-secret-secret', EVENT, SANDBOX_NO_LOOPBACK);
        assert.equal(result.ok, false, url);
        assert.match(result.error ?? '', /EFORBIDDENADDRESS: refused: .*loopback/, url);
      }
      assert.equal(receiver.received.length, 0, 'nothing reached the receiver');
    } finally {
      await receiver.close();
    }
  });

  it('no answer within 10 s is a failed attempt (the wait is DELIVERY_TIMEOUT_MS; a hanging receiver shown with a shorter one)', async function () {
    assert.equal(DELIVERY_TIMEOUT_MS, 10_000, "the spec's 10 s");
    const receiver = await startReceiver(() => 'hang');
    try {
      const result = await postEvent(receiver.url, 'secret-secret-secret', EVENT, SANDBOX, undefined, 300);
      assert.equal(result.ok, false);
      assert.match(result.error ?? '', /ETIMEDOUT: no answer within 0\.3 s/);
      assert.equal(receiver.received.length, 1, 'the request reached the receiver, which never answered');
    } finally {
      await receiver.close();
    }
  });

  it('a non-2xx status and a refused connection are failed attempts', async () => {
    const receiver = await startReceiver(() => 404);
    try {
      assert.deepEqual(await postEvent(receiver.url, 'secret-secret-secret', EVENT, SANDBOX), { ok: false, status: 404, error: 'HTTP 404' });
    } finally {
      await receiver.close();
    }
    const refused = await postEvent(receiver.url, 'secret-secret-secret', EVENT, SANDBOX);
    assert.equal(refused.ok, false);
    assert.match(refused.error ?? '', /ECONNREFUSED/);
  });
});
