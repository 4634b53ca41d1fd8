import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowContinuedAsNewError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, Worker } from '@temporalio/worker';
import { fulfilmentRecoveryWorkflow } from '../../workflows';
import { ROUNDS_PER_RUN } from '../../workflows/fulfilment-recovery';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { workflowStarters } from '../../src/temporal/starters';
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import { appendEvent } from '../../src/events/outbox';
import { registerEndpoint } from '../../src/webhooks/endpoints';
import { SecretBox } from '../../src/auth/secret-box';
import { webhookWorkflowId } from '../../workflows/messages';
import { waitFor } from '../helpers/wait';
import { recordHistory } from '../helpers/histories';

const EventType = temporal.api.enums.v1.EventType;
/** Temporal warns about a workflow's history at 10,240 events (and fails it at 51,200). */
const HISTORY_WARNING = 10_240;

/** A worker of the sweep with every step's activity answering 0, but for those given. */
async function sweepWorker(taskQueue: string, activities: Record<string, () => Promise<number>>): Promise<Worker> {
  const s = getStack();
  const idle = async () => 0;
  return Worker.create({
    connection: s.env.nativeConnection,
    taskQueue,
    workflowBundle: s.workflowBundle,
    activities: { startUnstartedFulfilments: idle, startUnstartedReferralWindows: idle, wakeLateDeliveries: idle, settleStalledPayments: idle, ...activities },
  });
}

describe('fulfilment recovery sweep (time-skipping server)', () => {
  ownTemporal();
  it('continues as new well before its history reaches the 10,240-event warning', async function () {
    this.timeout(5 * 60_000);
    const s = getStack();
    const taskQueue = `recovery-${randomUUID()}`;
    let rounds = 0;
    // The sweep's own activities are tested with the orders; here only the history's shape matters.
    const worker = await sweepWorker(taskQueue, {
      startUnstartedFulfilments: async () => {
        rounds++;
        return 0;
      },
    });
    const workflowId = `recovery-test-${randomUUID()}`;
    await worker.runUntil(async () => {
      const started = await s.env.client.workflow.start(fulfilmentRecoveryWorkflow, { workflowId, taskQueue });
      const firstRun = s.env.client.workflow.getHandle(workflowId, started.firstExecutionRunId, { followRuns: false });
      await assert.rejects(firstRun.result(), WorkflowContinuedAsNewError);
      const { events } = await firstRun.fetchHistory();
      const length = events!.length;
      const roundsInRun = events!.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_FIRED).length;
      const perRound = length / roundsInRun;
      process.stderr.write(`      (one run: ${roundsInRun} rounds, ${length} events, ${perRound.toFixed(1)} per round; 1440 rounds would be ~${Math.round(perRound * 1440)})\n`);
      assert.equal(events!.at(-1)!.eventType, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, 'the run continued as new');
      assert.equal(roundsInRun, ROUNDS_PER_RUN);
      assert.ok(length < HISTORY_WARNING / 2, `${length} events in one run: well under ${HISTORY_WARNING}`);
      assert.ok(rounds >= ROUNDS_PER_RUN);
      await recordHistory(workflowId, 'fulfilment-recovery-run-with-payments', { runId: started.firstExecutionRunId });
      // Terminated only once the next run sleeps: the test server leaks its time-skipping lock when
      // a run is terminated with a workflow task in flight (sdk-java #3088), stalling later tests.
      const nextRun = s.env.client.workflow.getHandle(workflowId);
      await waitFor(async () => ((await nextRun.fetchHistory()).events ?? []).map((e) => e.eventType), (types) => types.includes(EventType.EVENT_TYPE_TIMER_STARTED), 30_000, 'the next run asleep');
      await nextRun.terminate('test done');
    });
  });

  it("its steps fail independently: a step that keeps failing never holds back the others' rounds", async function () {
    this.timeout(2 * 60_000);
    const s = getStack();
    const taskQueue = `recovery-steps-${randomUUID()}`;
    const calls = { fulfilments: 0, referrals: 0, deliveries: 0 };
    const worker = await sweepWorker(taskQueue, {
      startUnstartedFulfilments: async () => {
        calls.fulfilments++;
        throw new Error('the database refused');
      },
      startUnstartedReferralWindows: async () => {
        calls.referrals++;
        return 0;
      },
      wakeLateDeliveries: async () => {
        calls.deliveries++;
        return 0;
      },
    });
    const workflowId = `recovery-steps-${randomUUID()}`;
    await worker.runUntil(async () => {
      const handle = await s.env.client.workflow.start(fulfilmentRecoveryWorkflow, { workflowId, taskQueue });
      await waitFor(async () => {
        await s.env.sleep('1 minute');
        return calls.deliveries;
      }, (rounds) => rounds >= 3, 60_000, 'three rounds');
      assert.ok(calls.referrals >= 3 && calls.fulfilments >= 9, `${JSON.stringify(calls)}: the failing step was tried 3 times a round, the others still ran`);
      await waitFor(async () => ((await handle.fetchHistory()).events ?? []).at(-1)?.eventType, (last) => last === EventType.EVENT_TYPE_TIMER_STARTED, 30_000, 'asleep');
      await handle.terminate('test done');
    });
  });

  it("one partner's refused wake-up never stops the sweep from waking the others", async () => {
    const s = getStack();
    const refused = await lateEndpoint();
    const served = await lateEndpoint();
    const woken: string[] = [];
    // A client whose every start or signal for `refused` fails, as a server refusing it would; the
    // other wake-ups are recorded, not sent (no worker serves this test's queue).
    const client = {
      workflow: {
        start: async (_: unknown, options: { workflowId: string }) => wake(options.workflowId),
        signalWithStart: async (_: unknown, options: { workflowId: string }) => wake(options.workflowId),
      },
    };
    function wake(workflowId: string) {
      if (workflowId === webhookWorkflowId(refused, 'sandbox')) throw new Error('signal refused: too many signals');
      woken.push(workflowId);
    }
    const activities = createActivities({ dataSource: s.dataSource, masterKey: s.masterKey, starters: workflowStarters({ client: client as unknown as Client, taskQueue: 'unused' }, s.dataSource) });
    const warnings: string[] = [];
    const logger = new DefaultLogger('WARN', (entry) => warnings.push(entry.message));
    const count = await new MockActivityEnvironment(undefined, { logger }).run(activities.wakeLateDeliveries);
    assert.ok(warnings.some((w) => w.includes('could not wake a delivery')), 'the refusal is logged');
    assert.ok(woken.includes(webhookWorkflowId(served, 'sandbox')), 'the partner after the refused one was woken');
    assert.ok(!woken.includes(webhookWorkflowId(refused, 'sandbox')));
    assert.equal(count, woken.length);

    async function lateEndpoint(): Promise<string> {
      const { partnerId } = await newPartner();
      await registerEndpoint(s.dataSource, new SecretBox(s.masterKey), { partnerId, environment: 'sandbox', url: 'http://127.0.0.1:9/hooks', secret: 'whsec_dGVzdC1kZWxpdmVyeS1zZWNyZXQtMjRi' }, { allowLoopback: true });
      await s.dataSource.transaction((tx) => appendEvent(tx, { partnerId, environment: 'sandbox', type: 'order.created', data: {}, dedupeKey: `sweep-test:${randomUUID()}` }));
      return partnerId;
    }
  });
});
