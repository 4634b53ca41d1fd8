import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createApp } from '../../src/api/app';
import { SandboxRegistrar, type RegistrarPort } from '../../src/orders/registrar';
import { fulfilmentStateQuery, orderWorkflowId, transferOutcomeUpdate } from '../../workflows/messages';
import { getStack, listen, newPartner, suiteWorker, ownTemporal } from '../helpers/stack';
import { buy, type OrderBody } from '../helpers/orders';
import { waitFor } from '../helpers/wait';
import type { PartnerClient } from '../../src/client/partner-client';
import { recordHistory } from '../helpers/histories';

/**
 * Registrar calls are bounded by the transfer's 5 days (time skipped on this file's own worker):
 * a registrar that never answers fails the order, and a registry that neither stops nor completes
 * a cancelled transfer is handed to an operator instead of being polled for ever.
 */
describe('a registrar that stops answering: bounded by the 5-day transfer deadline', function () {
  ownTemporal();
  this.timeout(5 * 60_000);

  async function withRegistrar(registrar: RegistrarPort, body: (client: PartnerClient, workflows: { taskQueue: string }) => Promise<void>): Promise<void> {
    const s = getStack();
    const taskQueue = `registrar-silent-${randomUUID()}`;
    const workflows = { client: s.env.client, taskQueue };
    const worker = await suiteWorker(taskQueue, { registrars: { sandbox: registrar }, workflows });
    const baseUrl = await listen(createApp({ ...s.appDeps, workflows }));
    const { client } = await newPartner({ baseUrl });
    await worker.runUntil(() => body(client, workflows));
  }

  const status = async (client: PartnerClient, publicId: string) => (await client.get<OrderBody>(`/api/partner/v1/orders/${publicId}`)).body.status;

  it('a registrar failing every lock for 5 days: the order ends TRANSFER_FAILED (the workflow does not fail) and the name is listed again', async () => {
    const s = getStack();
    const down: RegistrarPort = {
      lockDomain: async () => {
        throw new Error('registrar unreachable');
      },
      requestTransfer: async () => 'never',
      checkTransfer: async () => 'pending',
      cancelTransfer: async () => 'pending',
    };
    await withRegistrar(down, async (client) => {
      const o = await buy(client);
      const result = await s.env.client.workflow.getHandle(orderWorkflowId(o.public_id)).result();
      assert.deepEqual(result, { status: 'TRANSFER_FAILED', reason: 'the registrar did not answer for 5 days' });
      assert.equal(await status(client, o.public_id), 'TRANSFER_FAILED');
      assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${o.domain}`)).body.available, true);
      await recordHistory(orderWorkflowId(o.public_id), 'order-registrar-silent');
    });
  });

  it('a refund whose cancel the registry leaves pending for 5 days goes to an operator, whose "failed" grants the refund', async () => {
    const s = getStack();
    const sandbox = new SandboxRegistrar(s.dataSource);
    const stuck: RegistrarPort = {
      lockDomain: (order, attempt) => sandbox.lockDomain(order, attempt),
      requestTransfer: (order, attempt) => sandbox.requestTransfer(order, attempt),
      checkTransfer: async () => 'pending',
      cancelTransfer: async () => 'pending',
    };
    await withRegistrar(stuck, async (client) => {
      const o = await buy(client);
      const handle = s.env.client.workflow.getHandle(orderWorkflowId(o.public_id));
      await waitFor(() => status(client, o.public_id), (st) => st === 'TRANSFER_PENDING', 30_000, 'TRANSFER_PENDING');
      // The refund waits for the registry; the time-skipping server does not skip time while a
      // client waits on an Update, so the 5 days are skipped by hand.
      const refund = client.post<{ status: string }>('/api/partner/v1/refunds', { order_id: o.public_id, reason: 'buyer changed their mind' });
      await waitFor(() => handle.query(fulfilmentStateQuery), (state) => state.refund !== null, 30_000, 'the refund asked');
      for (let day = 0; day < 6 && !(await handle.query(fulfilmentStateQuery)).awaitingOperator; day++) await s.env.sleep('1 day');
      assert.equal((await handle.query(fulfilmentStateQuery)).awaitingOperator, true, 'handed to an operator after 5 days of a pending cancel');
      await handle.executeUpdate(transferOutcomeUpdate, { args: [{ outcome: 'failed', reason: 'the registry confirmed it stopped the transfer' }] });
      // 201 when the decision came within the API's wait, else 202 (decided later): either way REFUNDED.
      const answer = await refund;
      assert.ok([201, 202].includes(answer.status), answer.text);
      assert.deepEqual(await s.env.client.workflow.getHandle(orderWorkflowId(o.public_id)).result(), { status: 'REFUNDED' });
      assert.equal(await status(client, o.public_id), 'REFUNDED');
      await recordHistory(orderWorkflowId(o.public_id), 'order-cancel-pending-to-operator');
    });
  });
});
