import assert from 'node:assert/strict';
import { metricsRegistry, watchDeployment } from '../../src/metrics/metrics';

/** The worker's deployment gauges, as a scrape reads them (the worker's registry, in this process). */
describe("operators: the worker deployment's gauges", () => {
  after(() => watchDeployment(undefined));
  const figures = async () => (await metricsRegistry.metrics()).split('\n').filter((l) => l.startsWith('partner_api_worker_deployment_')).sort();

  it('read Temporal once for the gauges of a scrape and the scrapes of the next 30 s; a failed read keeps the last figures, and is kept as long', async () => {
    let reads = 0;
    watchDeployment(async () => {
      reads++;
      return [
        { build_id: 'b2', status: 'current', pollers: 2, pinned_open_runs: 0 },
        { build_id: 'b1', status: 'draining', pollers: 1, pinned_open_runs: 3 },
      ];
    });
    const first = await figures();
    assert.ok(first.includes('partner_api_worker_deployment_pinned_open_runs{build_id="b1"} 3'), first.join('\n'));
    assert.ok(first.includes('partner_api_worker_deployment_pinned_open_runs{build_id="b2"} 0'), first.join('\n'));
    await figures();
    assert.equal(reads, 1, 'one read for two scrapes of all the gauges');

    let failures = 0;
    watchDeployment(async () => {
      failures++;
      throw new Error('Temporal is away');
    });
    assert.deepEqual(await figures(), first, 'the last figures stay');
    assert.deepEqual(await figures(), first);
    assert.equal(failures, 1, 'a failed read is kept for 30 s too: a Temporal that hangs is not asked at each scrape');
  });
});
