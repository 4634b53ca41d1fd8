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
import { DEPLOYMENT_NAME, makeCurrentIfFirst } from '../../src/temporal/versioning';
import type { DeployMove } from '../../src/admin/deploy';
import type { DeployStatus } from '../../src/temporal/deployment';
import { temporal } from '@temporalio/proto';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import type { MonthCloseResult } from '../../workflows/messages';
import { nonceRetentionWorkflow } from '../../workflows';
import { quoteWorkflowId, webhookWorkflowId } from '../../workflows/messages';
import { MONTH_END_WORKFLOW_ID, monthEndWorkflow } from '../../workflows/month-end';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { getStack, listen, newPartner, suiteWorker } from '../helpers/stack';
import { buy, freshDomain, quote } from '../helpers/orders';
import { waitFor } from '../helpers/wait';
import { adminWith } from '../helpers/admin';
import { wakeDelivery } from '../../src/webhooks/notify';
import { patchUse, type PatchUse } from '../../src/admin/temporal';
import { Like } from 'typeorm';
import { WorkerRelease } from '../../src/db/entities/worker-release';
import { recordHistory } from '../helpers/histories';
import { PATCHES, type PatchEntry } from '../../workflows/patches';
import { launchBrowser, screenshotsDir } from '../helpers/browser';
import path from 'node:path';
import net from 'node:net';
import os from 'node:os';
import { mkdtempSync, rmSync } from 'node:fs';
import { startDevServer } from '../../src/temporal/dev-server';

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
    // A backfill of last month's run (an outage over the first, caught up today): it closes the
    // months before the one it was due in, not before today's.
    const lastMonths = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1, 0, 5);
    await schedule.backfill([{ start: new Date(lastMonths - 60_000), end: new Date(lastMonths + 60_000), overlap: ScheduleOverlapPolicy.ALLOW_ALL }]);
    const due = new Date(lastMonths).toISOString().slice(0, 10);
    const [backfilledId] = await visible(`WorkflowId STARTS_WITH 'finance:month-close-${due}' AND ExecutionStatus = 'Completed'`, 'the backfilled close completed');
    const backfilled = (await env.client.workflow.getHandle(backfilledId!).result()) as MonthCloseResult;
    assert.equal(backfilled.before, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 10), 'the month it was due in');
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
    assert.equal(delivery.deprecated_in, null);
    assert.equal(delivery.retirable, false, 'a patch not yet deprecated is never removed');
    assert.match(delivery.verdict, /patched\(\)/);
    await handle.cancel();
  });

  it('a patch may be deprecated only when no run within retention started before code without it last ran, and removed only when none started before code calling patched() last ran', async () => {
    const s = getStack();
    const releases = s.dataSource.getRepository(WorkerRelease);
    const workflowType = `patchRuleProbe${randomUUID().replace(/-/g, '').slice(0, 8)}`;
    const P = `patch-rule-${randomUUID().slice(0, 8)}`;
    const entry = { workflowType, patchId: P, deprecatedIn: '0.3.0' };
    const useOf = async (e: PatchEntry = entry) => (await patchUse(env.client, s.dataSource, [e]))[0]!;
    const hour = 3_600_000;
    const code = (id: string, patches: string[], deprecatedPatches: string[], lastSeenAt: Date) => ({
      id: `${id} ${P}`, buildId: id, version: '0.1.0', patches, deprecatedPatches, firstSeenAt: new Date(Date.now() - 3 * hour), lastSeenAt,
    });
    // A run of the type, started while code calling patched(P) runs; no worker serves it.
    const run = await env.client.workflow.start(workflowType, { workflowId: `${workflowType}-1`, taskQueue: `no-worker-${randomUUID()}` });
    await visible(`WorkflowType = '${workflowType}'`, 'the run in visibility');
    const startedAt = Date.now();
    await releases.save([
      code('before-the-patch', [], [], new Date(startedAt - 2 * hour)),
      code('patched-call', [P], [], new Date()),
    ]);
    try {
      const patchedOnly = await useOf({ workflowType, patchId: P });
      assert.equal(patchedOnly.runs_before_patch, 0, 'started after code without the patch last ran');
      assert.match(patchedOnly.verdict, /^may be deprecated/);
      assert.equal((await useOf()).verdict, 'keep deprecatePatch(): no worker whose code deprecates it (0.3.0) has run here yet');
      await releases.save(code('deprecating', [P], [P], new Date()));
      const open = await useOf();
      assert.equal(open.deprecation_shipped, true);
      assert.equal(open.runs_before_deprecation, 1);
      assert.equal(open.retirable, false, JSON.stringify(open));
      // Closed, but within retention: a query or a reset still replays it.
      await run.terminate('closed within retention');
      await visible(`WorkflowType = '${workflowType}' AND ExecutionStatus = 'Terminated'`, 'the run closed');
      const closed = await useOf();
      assert.equal(closed.runs_before_deprecation, 1);
      assert.equal(closed.retirable, false);
      assert.match(closed.verdict, /keep deprecatePatch\(\): 1 run/);
      // Had code calling patched() last run long before the run started, no run could hold its marker.
      await releases.update({ id: `patched-call ${P}` }, { lastSeenAt: new Date(startedAt - 2 * hour) });
      const after = await useOf();
      assert.equal(after.runs_before_deprecation, 0);
      assert.equal(after.retirable, true, after.verdict);
      // A release that reuses a build id for other code is another record: the old one still counts.
      await releases.save(code('patched-call-again', [P], [], new Date()));
      assert.equal((await useOf()).retirable, false, 'code calling patched() ran again');
    } finally {
      await releases.delete({ id: Like(`% ${P}`) });
    }
  });

  it('the release procedure with two worker versions (admin deploy): ramp, roll back, promote; pinned runs finish on the old version, which then drains; a rollback puts new runs back on it', async () => {
    const s = getStack();
    const queue = `versions-${randomUUID()}`;
    const workflows = { client: env.client, taskQueue: queue };
    const versionedWorker = (buildId: string) =>
      createWorker({ connection: env.nativeConnection, namespace: 'default', taskQueue: queue, dataSource: s.dataSource, client: env.client, masterKey: s.masterKey, allowLoopbackWebhooks: true, workflowBundle: s.workflowBundle, version: { deploymentName: DEPLOYMENT_NAME, buildId } });
    const versionOf = async (workflowId: string) => {
      const info = (await env.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.versioningInfo;
      return { behavior: info?.behavior, buildId: info?.deploymentVersion?.buildId };
    };
    const deploy = async (...args: string[]) => {
      const res = await adminWith({ TEMPORAL_ADDRESS: env.address, TEMPORAL_TASK_QUEUE: queue }, 'deploy', ...args, '--json');
      assert.equal(res.code, 0, `admin deploy ${args.join(' ')}: ${res.stderr}`);
      return JSON.parse(res.stdout) as DeployMove & DeployStatus;
    };
    /** A new quote's reservation, and the version it was started on. */
    const newQuoteOn = async (expected: string, what: string) => {
      const id = `quo_test${randomUUID().replace(/-/g, '').slice(0, 16)}`;
      await startQuoteReservation(workflows, { quotePublicId: id, partnerId: randomUUID(), environment: 'sandbox', domain: `${id}.com` });
      await waitFor(async () => (await versionOf(quoteWorkflowId(id))).buildId, (build) => build === expected, 30_000, what);
      return id;
    };
    const PINNED = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;
    const AUTO_UPGRADE = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE;
    const ONE = '0.1.0+one';
    const TWO = '0.2.0+two';
    const quotes: string[] = [];

    // Release one: the deployment's first version becomes current as its worker starts.
    const v1 = await versionedWorker(ONE);
    const v1Run = v1.run();
    assert.equal(await makeCurrentIfFirst(env.client, 'default', { deploymentName: DEPLOYMENT_NAME, buildId: ONE }), true);
    const oldQuote = await newQuoteOn(ONE, 'a quote on version one');
    const retention = await env.client.workflow.start(nonceRetentionWorkflow, { workflowId: `nonce-retention-${randomUUID()}`, taskQueue: queue, args: [{ prunedTotal: 0 }] });
    await waitFor(async () => (await versionOf(retention.workflowId)).buildId, (b) => b === ONE, 30_000, 'the maintenance loop on version one');
    assert.equal((await versionOf(quoteWorkflowId(oldQuote))).behavior, PINNED);
    assert.equal((await versionOf(retention.workflowId)).behavior, AUTO_UPGRADE);

    // Release two's worker starts beside it, and takes nothing until an operator moves.
    const v2 = await versionedWorker(TWO);
    const v2Run = v2.run();
    let v1Stopped = false;
    try {
      assert.equal(await makeCurrentIfFirst(env.client, 'default', { deploymentName: DEPLOYMENT_NAME, buildId: TWO }), false, 'a new release never makes itself current');
      const status = await waitFor(
        () => deploy('status'),
        (st) => st.versions.length === 2 && st.versions.every((v) => v.pollers > 0) && st.versions.find((v) => v.build_id === ONE)!.pinned_open_runs >= 1,
        30_000,
        'both versions polling, the old quote pinned to one',
      );
      assert.equal(status.current_build_id, ONE);
      assert.deepEqual(status.versions.map((v) => [v.build_id, v.status]), [[TWO, 'inactive'], [ONE, 'current']]);
      quotes.push(await newQuoteOn(ONE, 'before any move, new runs on version one'));

      // Ramp: the share of new runs given goes to two (all of them at 100 %).
      const ramped = await deploy('ramp', '100');
      assert.equal(ramped.status.ramping_build_id, TWO);
      assert.equal(ramped.status.ramp_percent, 100);
      quotes.push(await newQuoteOn(TWO, 'ramped: a new run on version two'));
      // Rollback of a ramp: every new run back on one.
      const withdrawn = await deploy('rollback');
      assert.equal(withdrawn.status.ramping_build_id, null);
      quotes.push(await newQuoteOn(ONE, 'the ramp withdrawn: new runs on version one'));

      // Promote: two is current; the pinned quote finishes on one, the auto-upgrading loop moves to two.
      const promoted = await deploy('promote');
      assert.equal(promoted.status.current_build_id, TWO);
      quotes.push(await newQuoteOn(TWO, 'promoted: new runs on version two'));
      await signalQuoteConsumed(workflows, oldQuote);
      assert.equal(await env.client.workflow.getHandle(quoteWorkflowId(oldQuote)).result(), 'consumed');
      assert.equal((await versionOf(quoteWorkflowId(oldQuote))).buildId, ONE, 'pinned: finished on the version that started it');
      await retention.signal('wake');
      await waitFor(async () => (await versionOf(retention.workflowId)).buildId, (b) => b === TWO, 30_000, 'the auto-upgrading run on version two');

      // Rollback: one is current again (its worker still runs): new runs go back to it.
      const rolledBack = await deploy('rollback');
      assert.equal(rolledBack.status.current_build_id, ONE);
      quotes.push(await newQuoteOn(ONE, 'rolled back: new runs on version one'));
      // A second rollback never brings back the release just rolled back from.
      const again = await adminWith({ TEMPORAL_ADDRESS: env.address, TEMPORAL_TASK_QUEUE: queue }, 'deploy', 'rollback', '--json');
      assert.notEqual(again.code, 0);
      assert.match(again.stderr, /no earlier version to roll back to/);
      // Restarting two's worker does not take the deployment back.
      assert.equal(await makeCurrentIfFirst(env.client, 'default', { deploymentName: DEPLOYMENT_NAME, buildId: TWO }), false);
      assert.equal((await deploy('promote')).status.current_build_id, TWO, 'promoted again');
      // An operator routes new runs to unversioned workers (current: none): a versioned worker that
      // restarts takes nothing back, not even the first release's.
      const { conflictToken } = await env.client.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName: DEPLOYMENT_NAME });
      await env.client.workflowService.setWorkerDeploymentCurrentVersion({ namespace: 'default', deploymentName: DEPLOYMENT_NAME, buildId: '', conflictToken, identity: 'test: unversioned', ignoreMissingTaskQueues: true });
      assert.equal((await deploy('status')).current_build_id, null, 'routed to unversioned workers');
      assert.equal(await makeCurrentIfFirst(env.client, 'default', { deploymentName: DEPLOYMENT_NAME, buildId: TWO }), false);
      assert.equal(await makeCurrentIfFirst(env.client, 'default', { deploymentName: DEPLOYMENT_NAME, buildId: ONE }), false);
      assert.equal((await deploy('status')).current_build_id, null, 'still with the unversioned workers, as the operator left it');
      assert.equal((await deploy('promote')).status.current_build_id, TWO, 'until an operator promotes');

      // One drains: its pinned runs end (here: cancelled), then its worker is stopped.
      for (const id of quotes) await env.client.workflow.getHandle(quoteWorkflowId(id)).cancel();
      const drained = await waitFor(() => deploy('status'), (st) => st.versions.find((v) => v.build_id === ONE)!.pinned_open_runs === 0, 30_000, 'version one holding no pinned run');
      assert.equal(drained.versions.find((v) => v.build_id === ONE)!.status === 'current', false);
      v1.shutdown();
      await v1Run;
      v1Stopped = true;
      await retention.terminate('test done');
    } finally {
      if (!v1Stopped) v1.shutdown();
      v2.shutdown();
      await Promise.all([v1Run, v2Run]);
    }
  });
});

describe('npm start’s Temporal dev server', () => {
  it('one that cannot start says why: its last words are in the error (its log may be gone with its data directory)', async () => {
    const s = getStack();
    const cliPath = await ensureTemporalCli(s.config.toolCacheDir, s.config.temporal.cliPath);
    if (!cliPath) throw new Error('no Temporal CLI and no Go to build one');
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-dev-server-'));
    try {
      const port = (taken.address() as net.AddressInfo).port;
      await assert.rejects(
        startDevServer({ cliPath, dataDir, port, uiPort: await freePort(), namespace: 'default', log: () => undefined }),
        (err: Error) => /exited with code 1.*; it said last:\n.*address already in use/s.test(err.message),
      );
    } finally {
      taken.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
