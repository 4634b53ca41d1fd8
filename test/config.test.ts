import assert from 'node:assert/strict';
import { loadConfig, loadDevStackConfig } from '../src/config';

describe('configuration (src/config.ts)', () => {
  it('WEBHOOK_ALLOW_LOOPBACK is off unless the operator switches it on; npm start switches it on', () => {
    assert.equal(loadConfig({}).webhooks.allowLoopback, false);
    assert.equal(loadConfig({ WEBHOOK_ALLOW_LOOPBACK: 'true' }).webhooks.allowLoopback, true);
    assert.equal(loadConfig({ WEBHOOK_ALLOW_LOOPBACK: '0' }).webhooks.allowLoopback, false);
    assert.equal(loadDevStackConfig({}).webhooks.allowLoopback, true);
    assert.equal(loadDevStackConfig({ WEBHOOK_ALLOW_LOOPBACK: 'false' }).webhooks.allowLoopback, false, 'the developer can still switch it off');
  });

  it('an unclear flag value stops the start rather than being guessed', () => {
    assert.throws(() => loadConfig({ WEBHOOK_ALLOW_LOOPBACK: 'maybe' }), /WEBHOOK_ALLOW_LOOPBACK/);
  });
});
