import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startQuoteReservation } from '../../src/orders/start-workflows';
import { fastForwardUpdate, quoteWorkflowId } from '../../workflows/messages';
import { recordHistory } from '../helpers/histories';
import { Worker } from '@temporalio/worker';
import { getStack, ownTemporal } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

/**
 * A run ends only when its handlers have: a sandbox fast-forward accepted in the very task that
 * brings a quote's cancellation (a lost race) is answered, never left for its caller to fail with
 * "workflow completed before the update completed". No worker runs while both arrive, so the next
 * one meets them in one task.
 */
/** How an update ended: its answer, or its failure in words. */
const settle = (update: Promise<string>) =>
  update.then(
    (wait) => ({ answered: wait }),
    (err: Error) => ({ failed: `${err.name}: ${err.message}${err.cause ? ` (${(err.cause as Error).message})` : ''}` }),
  );

describe('a quote reservation cancelled while a fast-forward waits answers the fast-forward', () => {
  ownTemporal();
  it('the update is answered (or refused), and the run ends not_taken: no handler left unfinished', async function () {
    this.timeout(60_000);
    const s = getStack();
    const taskQueue = `quote-handlers-${randomUUID()}`;
    const workflows = { client: s.env.client, taskQueue };
    const quotePublicId = `quo_test${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const handle = s.env.client.workflow.getHandle(quoteWorkflowId(quotePublicId));
    // No workflow cache: no sticky queue, so the next worker gets the run's next task at once.
    const worker = () => Worker.create({ connection: s.env.nativeConnection, taskQueue, workflowBundle: s.workflowBundle, maxCachedWorkflows: 0 });
    const first = await worker();
    await first.runUntil(async () => {
      await startQuoteReservation(workflows, { quotePublicId, partnerId: randomUUID(), environment: 'sandbox', domain: 'handlers-finish.com' });
      await waitFor(async () => ((await handle.fetchHistory()).events ?? []).some((e) => e.timerStartedEventAttributes), Boolean, 20_000, 'the 10-minute timer started');
    });
    // No worker now: the fast-forward and the cancellation wait for the next one, together.
    const fastForward = settle(handle.executeUpdate(fastForwardUpdate));
    // The update is admitted once its request reaches the server (a workflow task is then due).
    await new Promise((r) => setTimeout(r, 500));
    await handle.cancel();
    const second = await worker();
    const [outcome, result] = await second.runUntil(Promise.all([handle.result(), fastForward]));
    assert.equal(outcome, 'absent');
    if ('failed' in result) assert.match(result.failed, /nothing to fast-forward/, 'refused by its validator, never left unfinished');
    else assert.equal(result.answered, 'quote_expiry');
    await recordHistory(handle.workflowId, 'quote-cancelled-during-fast-forward');
  });

  it("a fast-forward sent with the run's first task (an object fast-forwarded as soon as it is made) is taken, not refused as waiting on nothing", async function () {
    this.timeout(60_000);
    const s = getStack();
    const taskQueue = `quote-first-task-${randomUUID()}`;
    const workflows = { client: s.env.client, taskQueue };
    const quotePublicId = `quo_test${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const handle = s.env.client.workflow.getHandle(quoteWorkflowId(quotePublicId));
    // No worker yet: the start and the update wait for the first one, in one task.
    await startQuoteReservation(workflows, { quotePublicId, partnerId: randomUUID(), environment: 'sandbox', domain: 'first-task.com' });
    const fastForward = settle(handle.executeUpdate(fastForwardUpdate));
    await new Promise((r) => setTimeout(r, 500));
    const worker = await Worker.create({ connection: s.env.nativeConnection, taskQueue, workflowBundle: s.workflowBundle, maxCachedWorkflows: 0, activities: { expireQuote: async () => 'expired' } });
    const answer = await worker.runUntil(fastForward);
    assert.deepEqual(answer, { answered: 'quote_expiry' });
  });
});

