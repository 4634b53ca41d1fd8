import assert from 'node:assert/strict';
import { PARTS, restartTable, runChaos } from '../../bench/chaos-run';
import { loadConfig } from '../../src/config';
import { testSearchDataDir } from '../helpers/stack';

/**
 * The chaos run, short (issue: nothing lost when any part dies): its own npm start, each part
 * killed once with SIGKILL under a few dozen orders, checkouts, refunds, brokerage moves and
 * clicks; nothing may be lost, doubled or stuck, every event delivered once, reconcile clean, and
 * Ctrl-C still stops everything. `npm run chaos` is the full size.
 */
describe('chaos: every part killed once under load, nothing lost', () => {
  it('orders, checkouts, refunds, brokerage moves, clicks and webhooks ride through Postgres, Redis, Temporal, search, worker and API kills', async function () {
    this.timeout(30 * 60_000);
    const report = await runChaos({ orders: 30, killsPerPart: 1, concurrency: 4, partners: 12, deliveryWaitMs: 8 * 60_000, seedEmbeddings: testSearchDataDir(loadConfig()), prebuiltBundle: true, log: (m) => console.log(`      ${m}`) });
    console.log(restartTable(report.kills).replace(/^/gm, '      '));
    assert.deepEqual(report.problems, []);
    for (const part of PARTS) assert.equal(report.kills.filter((k) => k.part === part && k.backAt).length, 1, `${part} killed once and back`);
    assert.ok(report.counts.orders >= 30);
    assert.ok(report.counts.checkouts >= 1 && report.counts.brokerageMoves >= 2 && report.counts.clicks >= 30);
    assert.ok(report.counts.replaysRefused >= 1, 'a replay across the Redis restart was tried and refused');
    assert.ok(report.stoppedCleanly);
  });
});
