import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Environment } from '../../src/config';
import { appendEvent } from '../../src/events/outbox';
import { PartnerEvent } from '../../src/db/entities/partner-event';
import type { WorkflowStarter } from '../../src/temporal/start';
import { lateDeliveries, notifyEventsAppended, wakeDelivery } from '../../src/webhooks/notify';
import { registerEndpoint } from '../../src/webhooks/endpoints';
import { SecretBox } from '../../src/auth/secret-box';
import { webhookWorkflowId } from '../../workflows/messages';
import { getStack, newPartner, suiteWorker, ownTemporal } from '../helpers/stack';
import { startReceiver } from '../helpers/receiver';
import { waitFor } from '../helpers/wait';
import { recordHistory } from '../helpers/histories';

const EventType = temporal.api.enums.v1.EventType;
const SECRET = 'whsec_dGVzdC1kZWxpdmVyeS1zZWNyZXQtMjRi';
/** What the issue allows one run of a delivery while its partner is down for 3 days. */
const MAX_EVENTS_PER_RUN = 2_000;

/**
 * One partner's outage on the time-skipping server: the recovery sweep's wake-up every 2 minutes
 * and a new event every hour, for 3 days, while another partner on the same worker is served.
 */
describe('webhook delivery history: a partner down for days stays small and stalls no one', () => {
  ownTemporal();
  it('a wake-up never adds history to a busy delivery: 71 hours down with new events keeps each run under 2,000 events, and another partner is delivered meanwhile', async function () {
    this.timeout(10 * 60_000);
    const s = getStack();
    const taskQueue = `webhooks-history-${randomUUID()}`;
    const workflows: WorkflowStarter = { client: s.env.client, taskQueue };
    const worker = await suiteWorker(taskQueue, { workflows });
    const down = await startReceiver(() => 500);
    const up = await startReceiver(() => 200);
    try {
      const failing = await endpointFor(down.url);
      const healthy = await endpointFor(up.url);
      const mine = new Set([failing, healthy]);
      let appended = 0;
      const append = async (partnerId: string) => {
        await s.dataSource.transaction((tx) => appendEvent(tx, { partnerId, environment: 'sandbox', type: 'order.created', data: { n: ++appended }, dedupeKey: `history-test:${randomUUID()}` }));
        await notifyEventsAppended(s.dataSource, workflows, partnerId, 'sandbox');
      };
      // What the sweep's wakeLateDeliveries does, for this test's partners only (other tests' endpoints are late too).
      const sweep = async () => {
        for (const late of await lateDeliveries(s.dataSource)) if (mine.has(late.partnerId)) await wakeDelivery(workflows, late.partnerId, late.environment, late.idle);
      };
      const failingRun = () => new Client({ connection: s.env.connection }).workflow.getHandle(webhookWorkflowId(failing, 'sandbox'));

      await worker.runUntil(async () => {
        await append(failing);
        await append(healthy);
        let sent = 1;
        await waitFor(() => [down.received.length, up.accepted.length], (counts) => counts.every((n) => n >= 1), 30_000, 'first attempts');
        let lengthWhenBusy = 0;
        // Up to an hour before the first event's 3 days end (then it is given up and the next goes).
        for (let minute = 2; minute <= 71 * 60; minute += 2) {
          await s.env.sleep('2 minutes');
          await sweep();
          if (minute % 60 === 0) {
            await append(failing);
            await append(healthy);
            sent++;
          }
          if (minute === 60) lengthWhenBusy = (await failingRun().fetchHistory()).events!.length;
          if (minute === 24 * 60) {
            // The healthy partner is not held back by the other's outage.
            const expected = await eventCount(healthy);
            await waitFor(() => new Set(up.accepted.map((r) => r.headers['x-service-event-id'])).size, (served) => served === expected, 30_000, 'the healthy partner served after a day');
          }
        }
        const events = (await failingRun().fetchHistory()).events!;
        process.stderr.write(`      (the failing partner's delivery: ${events.length} history events after 71 hours, ${lengthWhenBusy} after its first hour; ${down.received.length} attempts)\n`);
        assert.ok(events.length < MAX_EVENTS_PER_RUN, `${events.length} events in the run`);
        // While it retried one event for 71 hours, the one thing added is the 24-hour timer that
        // emails the partner's contact (the timer firing, one workflow task, its one activity, the next task).
        const added = events.slice(lengthWhenBusy);
        assert.equal(added.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_FIRED).length, 1, "the only timer fired: the 24-hour email's");
        assert.equal(added.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).length, 1, 'its one activity');
        assert.equal(added.length, 10, `nothing else added while it retried one event: no signal, no other workflow task (${added.map((e) => e.eventType).join(', ')})`);
        assert.equal(events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED).length, 1, 'only the first wake-up, while it was waiting');
        const expected = await eventCount(healthy);
        await waitFor(() => new Set(up.accepted.map((r) => r.headers['x-service-event-id'])).size, (served) => served === expected, 30_000, 'every event of the healthy partner');
        assert.equal(expected, sent);
        await recordHistory(webhookWorkflowId(healthy, 'sandbox'), 'webhook-delivery-wake-ups');
        // Both runs end before this file's worker stops: a workflow task left on a queue without a
        // worker would hold the test server's clock for every later test.
        for (const partnerId of mine) {
          const handle = s.env.client.workflow.getHandle(webhookWorkflowId(partnerId, 'sandbox'));
          if ((await handle.describe()).status.name !== 'RUNNING') continue;
          await handle.cancel();
          await handle.result().catch(() => undefined);
        }
      });
    } finally {
      await down.close();
      await up.close();
    }

    async function endpointFor(url: string): Promise<string> {
      const { partnerId } = await newPartner();
      await registerEndpoint(s.dataSource, new SecretBox(s.masterKey), { partnerId, environment: 'sandbox', url, secret: SECRET }, { allowLoopback: true });
      return partnerId;
    }

    async function eventCount(partnerId: string, environment: Environment = 'sandbox'): Promise<number> {
      return s.dataSource.getRepository(PartnerEvent).countBy({ partnerId, environment });
    }
  });
});
