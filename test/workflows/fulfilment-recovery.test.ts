import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowContinuedAsNewError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { fulfilmentRecoveryWorkflow } from '../../workflows';
import { ROUNDS_PER_RUN } from '../../workflows/fulfilment-recovery';
import { getStack } from '../helpers/stack';
import { waitUntil } from '../helpers/receiver';
import { recordHistory } from '../helpers/histories';

const EventType = temporal.api.enums.v1.EventType;
/** Temporal warns about a workflow's history at 10,240 events (and fails it at 51,200). */
const HISTORY_WARNING = 10_240;

describe('fulfilment recovery sweep (time-skipping server)', () => {
  it('continues as new well before its history reaches the 10,240-event warning', async function () {
    this.timeout(5 * 60_000);
    const s = getStack();
    const taskQueue = `recovery-${randomUUID()}`;
    let rounds = 0;
    // The sweep's own activities are tested with the orders; here only the history's shape matters.
    const worker = await Worker.create({
      connection: s.env.nativeConnection,
      taskQueue,
      workflowBundle: s.workflowBundle,
      activities: {
        startUnstartedFulfilments: async () => {
          rounds++;
          return 0;
        },
        startUnstartedReferralWindows: async () => 0,
        wakeLateDeliveries: async () => 0,
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
      await recordHistory(workflowId, 'fulfilment-recovery-run-with-referrals', { runId: started.firstExecutionRunId });
      // Terminated only once the next run sleeps: the test server leaks its time-skipping lock when
      // a run is terminated with a workflow task in flight (sdk-java #3088), stalling later tests.
      const nextRun = s.env.client.workflow.getHandle(workflowId);
      await waitUntil(async () => ((await nextRun.fetchHistory()).events ?? []).some((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED), 30_000, 'the next run asleep');
      await nextRun.terminate('test done');
    });
  });
});
