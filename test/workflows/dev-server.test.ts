import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { createApp } from '../../src/api/app';
import { ensureTemporalCli } from '../../src/temporal/tools';
import { ensureMonthEndSchedule, MONTH_END_SCHEDULE_ID } from '../../src/temporal/maintenance';
import { stuckQuery } from '../../src/temporal/operator-queries';
import { cancelQuoteReservation, startQuoteReservation } from '../../src/orders/start-workflows';
import { quoteWorkflowId, webhookWorkflowId } from '../../workflows/messages';
import { MONTH_END_WORKFLOW_ID, monthEndWorkflow } from '../../workflows/month-end';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { getStack, listen, newPartner } from '../helpers/stack';
import { buy, freshDomain, quote } from '../helpers/orders';
import { waitUntil } from '../helpers/receiver';
import { adminWith } from '../helpers/admin';
import { wakeDelivery } from '../../src/webhooks/notify';
import type { PatchUse } from '../../src/admin/temporal';
import { recordHistory } from '../helpers/histories';

/**
 * What only a full server shows: visibility queries, Schedules and the UI's summaries. The
 * Temporal dev server (the CLI `npm start` runs), with a worker of this file's own; the
 * time-skipping server has no Schedules and only a small part of visibility.
 */
describe('on the Temporal dev server: the UI answers operators, the month end is a Schedule, patches are counted', function () {
  this.timeout(5 * 60_000);
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  let taskQueue: string;
  let baseUrl: string;

  before(async () => {
    const s = getStack();
    const cli = await ensureTemporalCli(s.config.toolCacheDir, s.config.temporal.cliPath);
    if (!cli) throw new Error('no Temporal CLI and no Go to build one');
    env = await TestWorkflowEnvironment.createLocal({ server: { executable: { type: 'existing-path', path: cli }, searchAttributes: ALL_SEARCH_ATTRIBUTES } });
    taskQueue = `dev-server-${randomUUID()}`;
    const workflows = { client: env.client, taskQueue };
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: s.workflowBundle,
      activities: createActivities({ dataSource: s.dataSource, masterKey: s.masterKey, allowLoopbackWebhooks: true, workflows }),
    });
    running = worker.run();
    baseUrl = await listen(createApp({ ...s.appDeps, workflows }));
  });

  after(async () => {
    worker?.shutdown();
    await running;
    await env?.teardown();
  });

  async function visible(query: string, what: string): Promise<string[]> {
    let ids: string[] = [];
    await waitUntil(async () => {
      ids = [];
      for await (const run of env.client.workflow.list({ query })) ids.push(run.workflowId);
      return ids.length > 0;
    }, 30_000, what);
    return ids;
  }

  it('every start carries a summary and details; BusinessStatusSince makes "orders in TRANSFER_PENDING for more than an hour" one query', async () => {
    const { client, partnerId } = await newPartner({ baseUrl });
    const q = await quote(client, (await freshDomain()).name);
    assert.equal(q.status, 201, q.text);
    const described = await env.client.workflow.getHandle(quoteWorkflowId(q.body.quote_id)).describe();
    assert.equal(await described.staticSummary(), `Quote ${q.body.quote_id} ${q.body.domain} for partner ${partnerId} (sandbox)`);
    assert.match((await described.staticDetails()) ?? '', /10 minutes/);

    const o = await buy(client);
    const transferPending = stuckQuery({ workflowType: 'orderFulfilmentWorkflow', businessStatus: 'TRANSFER_PENDING', since: new Date(Date.now() + 60_000) });
    const stuck = await visible(`${transferPending} AND PartnerId = '${partnerId}'`, 'the order visible at TRANSFER_PENDING');
    assert.deepEqual(stuck, [`order:${o.public_id}`]);
    const orderRun = await env.client.workflow.getHandle(stuck[0]).describe();
    assert.match((await orderRun.staticSummary()) ?? '', new RegExp(`^Order ${o.public_id} ${o.domain} for partner ${partnerId}`));
    assert.ok(orderRun.searchAttributes.BusinessStatusSince, 'BusinessStatusSince is set');
    const anHourAgo = stuckQuery({ workflowType: 'orderFulfilmentWorkflow', businessStatus: 'TRANSFER_PENDING', since: new Date(Date.now() - 3_600_000) });
    const older: string[] = [];
    for await (const run of env.client.workflow.list({ query: `${anHourAgo} AND PartnerId = '${partnerId}'` })) older.push(run.workflowId);
    assert.deepEqual(older, [], 'not pending for an hour yet');
  });

  it('a quote that lost its race is cancelled, not terminated: the run completes with BusinessStatus not_taken', async () => {
    const workflows = { client: env.client, taskQueue };
    const quotePublicId = `quo_test${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    await startQuoteReservation(workflows, { quotePublicId, partnerId: randomUUID(), environment: 'sandbox', domain: 'lost-race.com' });
    await cancelQuoteReservation(workflows, quotePublicId);
    const handle = env.client.workflow.getHandle(quoteWorkflowId(quotePublicId));
    assert.equal(await handle.result(), 'absent');
    const described = await handle.describe();
    assert.equal(described.status.name, 'COMPLETED');
    assert.deepEqual(described.searchAttributes.BusinessStatus, ['not_taken']);
    await recordHistory(handle.workflowId, 'quote-not-taken', { client: env.client });
  });

  it('the month end is a Schedule at 00:05 UTC on the first that an operator can trigger; it replaces the sleeping month-end workflow', async () => {
    const sleeping = await env.client.workflow.start(monthEndWorkflow, { workflowId: MONTH_END_WORKFLOW_ID, taskQueue });
    await ensureMonthEndSchedule(env.client, taskQueue);
    await ensureMonthEndSchedule(env.client, taskQueue); // a second start of the worker changes nothing
    await waitUntil(async () => (await sleeping.describe()).status.name === 'CANCELLED', 30_000, 'the sleeping month end cancelled');
    const schedule = env.client.schedule.getHandle(MONTH_END_SCHEDULE_ID);
    const described = await schedule.describe();
    assert.equal(described.action.type, 'startWorkflow');
    assert.equal(described.action.workflowType, 'monthCloseWorkflow');
    const next = described.info.nextActionTimes[0];
    assert.equal(next.toISOString(), new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1, 0, 5)).toISOString());
    await schedule.trigger();
    const closes = await visible(`WorkflowType = 'monthCloseWorkflow' AND ExecutionStatus = 'Completed'`, 'the triggered close completed');
    assert.ok(closes.some((id) => id.startsWith('finance:month-close-')), closes.join(', '));
    await schedule.delete();
  });

  it('admin workflows patches counts, per workflow type and patch id, the open runs that have not taken the patch (visibility)', async () => {
    const { partnerId } = await newPartner({ baseUrl });
    await wakeDelivery({ client: env.client, taskQueue }, partnerId, 'sandbox', true);
    const handle = env.client.workflow.getHandle(webhookWorkflowId(partnerId, 'sandbox'));
    await visible(`WorkflowId = '${handle.workflowId}' AND TemporalChangeVersion = 'delivery-wake-ups-count'`, 'the patch in visibility');
    const res = await adminWith({ TEMPORAL_ADDRESS: env.address }, 'workflows', 'patches', '--json');
    assert.equal(res.code, 0, res.stderr);
    const uses = JSON.parse(res.stdout) as PatchUse[];
    assert.deepEqual(uses.map((u) => `${u.workflow_type}/${u.patch_id}`).sort(), ['fulfilmentRecoveryWorkflow/start-unstarted-referral-windows', 'orderFulfilmentWorkflow/fulfilment-joined-steps', 'webhookDeliveryWorkflow/delivery-wake-ups-count']);
    const delivery = uses.find((u) => u.patch_id === 'delivery-wake-ups-count')!;
    assert.ok(delivery.open_runs >= 1 && delivery.open_runs_patched >= 1, JSON.stringify(delivery));
    assert.equal(delivery.open_runs_before_patch, delivery.open_runs - delivery.open_runs_patched);
    await handle.cancel();
  });
});
