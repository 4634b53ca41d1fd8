import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createApp } from '../../src/api/app';
import { freePort } from '../../src/main/child-process';
import { ensureTemporalCli } from '../../src/temporal/tools';
import { ensureMonthEndSchedule, MONTH_END_SCHEDULE_ID } from '../../src/temporal/maintenance';
import { stuckQuery } from '../../src/temporal/operator-queries';
import { cancelQuoteReservation, signalQuoteConsumed, startQuoteReservation } from '../../src/orders/start-workflows';
import { createWorker } from '../../src/temporal/worker';
import { makeCurrentVersion } from '../../src/temporal/versioning';
import { temporal } from '@temporalio/proto';
import { nonceRetentionWorkflow } from '../../workflows';
import { quoteWorkflowId, webhookWorkflowId } from '../../workflows/messages';
import { MONTH_END_WORKFLOW_ID, monthEndWorkflow } from '../../workflows/month-end';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { getStack, listen, newPartner, suiteWorker } from '../helpers/stack';
import { buy, freshDomain, quote } from '../helpers/orders';
import { waitFor } from '../helpers/wait';
import { adminWith } from '../helpers/admin';
import { wakeDelivery } from '../../src/webhooks/notify';
import type { PatchUse } from '../../src/admin/temporal';
import { recordHistory } from '../helpers/histories';
import { PATCHES } from '../../workflows/patches';
import { launchBrowser, screenshotsDir } from '../helpers/browser';
import path from 'node:path';

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
  let uiPort: number;

  before(async () => {
    const s = getStack();
    const cli = await ensureTemporalCli(s.config.toolCacheDir, s.config.temporal.cliPath);
    if (!cli) throw new Error('no Temporal CLI and no Go to build one');
    uiPort = await freePort();
    env = await TestWorkflowEnvironment.createLocal({ server: { executable: { type: 'existing-path', path: cli }, searchAttributes: ALL_SEARCH_ATTRIBUTES, ui: true, uiPort } });
    taskQueue = `dev-server-${randomUUID()}`;
    const workflows = { client: env.client, taskQueue };
    worker = await suiteWorker(taskQueue, { workflows }, env);
    running = worker.run();
    baseUrl = await listen(createApp({ ...s.appDeps, workflows }));
  });

  after(async () => {
    worker?.shutdown();
    await running;
    await env?.teardown();
  });

  /** Runs one of the service's entry points as a process, with the environment given. */
  function runEntry(entry: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      execFile(process.execPath, [path.join(getStack().config.projectRoot, entry)], { env: { ...process.env, ...env }, timeout: 120_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
      );
    });
  }

  /** The ids of the runs the visibility query finds, once `ok` holds of them (by default: once there is one). */
  async function visible(query: string, what: string, ok: (ids: string[]) => boolean = (ids) => ids.length > 0): Promise<string[]> {
    const ids = async () => {
      const found: string[] = [];
      for await (const run of env.client.workflow.list({ query })) found.push(run.workflowId);
      return found;
    };
    return waitFor(ids, ok, 30_000, what);
  }

  it('the compose setup job (dist/src/main/temporal-setup.js) registers a namespace with 30 days of retention and the search attributes of the code, and can run again', async () => {
    const namespace = `setup-${randomUUID().slice(0, 8)}`;
    const run = () => runEntry('dist/src/main/temporal-setup.js', { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: namespace });
    const first = await run();
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`namespace ${namespace} registered, retention 30 days`));
    const described = await env.connection.workflowService.describeNamespace({ namespace });
    assert.equal(Number(described.config?.workflowExecutionRetentionTtl?.seconds), 30 * 86_400);
    const { customAttributes } = await env.connection.operatorService.listSearchAttributes({ namespace });
    for (const key of ALL_SEARCH_ATTRIBUTES) assert.ok(customAttributes?.[key.name], `${key.name} registered`);
    const again = await run();
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /retention 30 days/);
    assert.match(again.stdout, /\(0 added\)/);
  });

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

    // What an operator sees: the run's summary at the top of its page in the Temporal UI.
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`http://127.0.0.1:${uiPort}/namespaces/default/workflows/${encodeURIComponent(stuck[0])}`);
      await page.getByText(`Order ${o.public_id} ${o.domain} for partner`).first().waitFor({ timeout: 30_000 });
      await page.getByText('User Metadata').first().click({ timeout: 30_000 });
      await page.getByText('Events with Metadata').first().waitFor({ timeout: 30_000 });
      await page.getByText('until the next transfer check').first().waitFor({ timeout: 30_000 });
      await page.screenshot({ path: path.join(screenshotsDir(), 'temporal-ui-order-summary.png') });
    } finally {
      await browser.close();
    }
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
    // Not while it runs a close of its own (it first closes earlier months left open, as a child):
    // the next start of a worker cancels it then, as this loop does.
    await waitFor(async () => {
      const status = (await sleeping.describe()).status.name;
      if (status !== 'CANCELLED') await ensureMonthEndSchedule(env.client, taskQueue);
      return status;
    }, (status) => status === 'CANCELLED', 30_000, 'the sleeping month end cancelled');
    const schedule = env.client.schedule.getHandle(MONTH_END_SCHEDULE_ID);
    const described = await schedule.describe();
    assert.equal(described.action.type, 'startWorkflow');
    assert.equal(described.action.workflowType, 'monthCloseWorkflow');
    const next = described.info.nextActionTimes[0];
    const now = new Date();
    const thisMonths = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1, 0, 5);
    const expected = now.getTime() < thisMonths ? thisMonths : Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1, 0, 5);
    assert.equal(next.toISOString(), new Date(expected).toISOString(), '00:05 UTC on the next first of a month');
    await schedule.trigger();
    // The sleeping month end's own close of an earlier month (`finance:month-close:<month>`) may
    // complete first: wait for the Schedule's run (`finance:month-close-<time>`).
    const triggered = (ids: string[]) => ids.some((id) => id.startsWith('finance:month-close-'));
    const closes = await visible(`WorkflowType = 'monthCloseWorkflow' AND ExecutionStatus = 'Completed'`, 'the triggered close completed', triggered);
    assert.ok(triggered(closes), closes.join(', '));
    await schedule.delete();
  });

  it("a worker's start brings an earlier release's Schedule to this release's spec and action, keeping an operator's pause", async () => {
    // As an earlier release made it: another time of day, no details, then paused by an operator.
    await env.client.schedule.create({
      scheduleId: MONTH_END_SCHEDULE_ID,
      spec: { calendars: [{ dayOfMonth: 1, hour: 3, minute: 0 }], timezone: 'UTC' },
      action: { type: 'startWorkflow', workflowType: 'monthCloseWorkflow', workflowId: 'finance:month-close', taskQueue, args: [{}] },
      state: { paused: true, note: 'paused by an operator during an incident' },
    });
    const schedule = env.client.schedule.getHandle(MONTH_END_SCHEDULE_ID);
    try {
      await ensureMonthEndSchedule(env.client, taskQueue);
      const described = await schedule.describe();
      const calendar = described.spec.calendars![0] as unknown as { hour: Array<{ start: number }>; minute: Array<{ start: number }> };
      assert.deepEqual([calendar.hour[0].start, calendar.minute[0].start], [0, 5], "this release's 00:05");
      assert.match(String((described.action as { staticDetails?: unknown }).staticDetails ?? ''), /idempotent/i, "this release's details");
      assert.equal(described.state.paused, true, "the operator's pause stays");
      assert.equal(described.state.note, 'paused by an operator during an incident');
    } finally {
      await schedule.delete();
    }
  });

  it('admin workflows patches counts, per workflow type and patch id, the open runs that have not taken the patch (visibility)', async () => {
    const { partnerId } = await newPartner({ baseUrl });
    await wakeDelivery({ client: env.client, taskQueue }, partnerId, 'sandbox', true);
    const handle = env.client.workflow.getHandle(webhookWorkflowId(partnerId, 'sandbox'));
    await visible(`WorkflowId = '${handle.workflowId}' AND TemporalChangeVersion = 'delivery-wake-ups-count'`, 'the patch in visibility');
    const res = await adminWith({ TEMPORAL_ADDRESS: env.address }, 'workflows', 'patches', '--json');
    assert.equal(res.code, 0, res.stderr);
    const uses = JSON.parse(res.stdout) as PatchUse[];
    assert.deepEqual(uses.map((u) => `${u.workflow_type}/${u.patch_id}`).sort(), Object.values(PATCHES).map((p) => `${p.workflowType}/${p.patchId}`).sort());
    const delivery = uses.find((u) => u.patch_id === 'delivery-wake-ups-count')!;
    assert.ok(delivery.open_runs >= 1 && delivery.open_runs_patched >= 1, JSON.stringify(delivery));
    await handle.cancel();
  });

  it('two worker versions side by side: a pinned quote stays on the version that started it, an auto-upgrading workflow moves to the new current version', async () => {
    const s = getStack();
    const queue = `versions-${randomUUID()}`;
    const deploymentName = `partner-api-test-${randomUUID().slice(0, 8)}`;
    const workflows = { client: env.client, taskQueue: queue };
    const versionedWorker = (buildId: string) =>
      createWorker({ connection: env.nativeConnection, namespace: 'default', taskQueue: queue, dataSource: s.dataSource, client: env.client, masterKey: s.masterKey, allowLoopbackWebhooks: true, workflowBundle: s.workflowBundle, version: { deploymentName, buildId } });
    const versionOf = async (workflowId: string) => {
      const info = (await env.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.versioningInfo;
      return { behavior: info?.behavior, buildId: info?.deploymentVersion?.buildId };
    };
    const PINNED = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;
    const AUTO_UPGRADE = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE;

    const v1 = await versionedWorker('0.1.0+one');
    const v1Run = v1.run();
    await makeCurrentVersion(env.client, 'default', { deploymentName, buildId: '0.1.0+one' });
    const oldQuote = `quo_test${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    await startQuoteReservation(workflows, { quotePublicId: oldQuote, partnerId: randomUUID(), environment: 'sandbox', domain: 'pinned-one.com' });
    const retention = await env.client.workflow.start(nonceRetentionWorkflow, { workflowId: `nonce-retention-${randomUUID()}`, taskQueue: queue, args: [{ prunedTotal: 0 }] });
    await waitFor(async () => [(await versionOf(quoteWorkflowId(oldQuote))).buildId, (await versionOf(retention.workflowId)).buildId], (builds) => builds.every((b) => b === '0.1.0+one'), 30_000, 'both on version one');
    assert.equal((await versionOf(quoteWorkflowId(oldQuote))).behavior, PINNED);
    assert.equal((await versionOf(retention.workflowId)).behavior, AUTO_UPGRADE);

    const v2 = await versionedWorker('0.2.0+two');
    const v2Run = v2.run();
    try {
      await makeCurrentVersion(env.client, 'default', { deploymentName, buildId: '0.2.0+two' });
      const newQuote = `quo_test${randomUUID().replace(/-/g, '').slice(0, 16)}`;
      await startQuoteReservation(workflows, { quotePublicId: newQuote, partnerId: randomUUID(), environment: 'sandbox', domain: 'pinned-two.com' });
      await waitFor(async () => (await versionOf(quoteWorkflowId(newQuote))).buildId, (build) => build === '0.2.0+two', 30_000, 'a new quote on version two');
      // The old quote's next task (the order's signal) is served by version one, which still runs.
      await signalQuoteConsumed(workflows, oldQuote);
      assert.equal(await env.client.workflow.getHandle(quoteWorkflowId(oldQuote)).result(), 'consumed');
      assert.equal((await versionOf(quoteWorkflowId(oldQuote))).buildId, '0.1.0+one', 'pinned: finished on the version that started it');
      // The auto-upgrading run's next task goes to the current version.
      await retention.signal('wake');
      await waitFor(async () => (await versionOf(retention.workflowId)).buildId, (build) => build === '0.2.0+two', 30_000, 'the auto-upgrading run on version two');
      // Version one's worker restarting does not take the deployment back to it.
      assert.equal(await makeCurrentVersion(env.client, 'default', { deploymentName, buildId: '0.1.0+one' }), false);
      const routing = (await env.client.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName })).workerDeploymentInfo?.routingConfig;
      assert.equal(routing?.currentDeploymentVersion?.buildId, '0.2.0+two');
      for (const id of [quoteWorkflowId(newQuote), retention.workflowId]) await env.client.workflow.getHandle(id).terminate('test done');
    } finally {
      v1.shutdown();
      v2.shutdown();
      await Promise.all([v1Run, v2Run]);
    }
  });
});
