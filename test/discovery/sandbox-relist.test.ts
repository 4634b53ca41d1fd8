import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sandboxRelistWorkflow } from '../../workflows/sandbox-relist';
import { recordHistory } from '../helpers/histories';
import { freshDomain, fulfilmentStepwise, order, quote } from '../helpers/orders';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';

/** Sandbox inventory never runs out (CONTRACT §15): a name sold is listed again 24 hours after its transfer completed. */
describe('sandbox relisting: a sold sandbox name is on the market again 24 hours after its transfer completed', function () {
  ownTemporal();
  this.timeout(120_000);

  it('not before 24 hours; then the relisting workflow (what its Schedule starts every 10 minutes) lists it again, and another partner can buy it', async () => {
    const s = getStack();
    const { client } = await newPartner();
    const { name } = await freshDomain();
    const q = await quote(client, name);
    const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'pay_relist', sale_price_cents: q.body.price_cents });
    assert.equal((await fulfilmentStepwise(o.body.public_id)).status, 'TRANSFER_COMPLETED');
    const available = async () => (await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${name}`)).body.available;
    assert.equal(await available(), false, 'sold');
    const relist = () => s.env.client.workflow.execute(sandboxRelistWorkflow, { workflowId: `sandbox-relist-${randomUUID()}`, taskQueue: s.taskQueue });

    await s.env.sleep('23 hours');
    await relist();
    assert.equal(await available(), false, 'not within 24 hours');
    await s.env.sleep('70 minutes');
    const workflowId = `sandbox-relist-${randomUUID()}`;
    assert.ok((await s.env.client.workflow.execute(sandboxRelistWorkflow, { workflowId, taskQueue: s.taskQueue })) >= 1);
    await recordHistory(workflowId, 'sandbox-relist');
    assert.equal(await available(), true, 'listed again');
    const other = await newPartner();
    assert.equal((await quote(other.client, name)).status, 201, 'another partner can buy it');
    // The first order keeps its history.
    assert.equal((await client.get<{ status: string }>(`/api/partner/v1/orders/${o.body.public_id}`)).body.status, 'TRANSFER_COMPLETED');
  });
});
