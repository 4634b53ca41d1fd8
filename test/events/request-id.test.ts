import assert from 'node:assert/strict';
import { PartnerEvent } from '../../src/db/entities/partner-event';
import { orderWorkflowId, quoteWorkflowId } from '../../workflows/messages';
import { freshDomain, fulfilmentResult, order, quote } from '../helpers/orders';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';

/** A partner's X-Request-Id leads an operator to the workflow the request started and the events it wrote. */
describe('a request id follows the request into its workflows and events', () => {
  ownTemporal();

  it("the order's workflow carries the request id in its memo; order.created records it; the quote's workflow carries its own request's; the events its activities write record it too", async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    const domain = await freshDomain();
    const q = await quote(client, domain.name);
    const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: 'request-id-test', sale_price_cents: q.body.price_cents });
    assert.equal(o.status, 201, o.text);
    const requestId = o.headers.get('x-request-id')!;
    assert.match(requestId, /^req_/);

    const memo = (await s.env.client.workflow.getHandle(orderWorkflowId(o.body.public_id)).describe()).memo;
    assert.equal(memo?.request_id, requestId);
    const quoteMemo = (await s.env.client.workflow.getHandle(quoteWorkflowId(q.body.quote_id)).describe()).memo;
    assert.equal(quoteMemo?.request_id, q.headers.get('x-request-id'));

    const created = await s.dataSource.getRepository(PartnerEvent).findOneByOrFail({ partnerId, type: 'order.created' });
    assert.equal(created.requestId, requestId);
    const listed = (await client.listEvents()).body.data.find((e) => e.type === 'order.created')!;
    assert.ok(!('request_id' in listed), 'operators only: the partner sees its X-Request-Id, not a field of the event');

    // The workflow's activities write the order's later events: the same request id, carried in
    // a header from the start through the workflow to each activity.
    assert.equal((await fulfilmentResult(o.body.public_id)).status, 'TRANSFER_COMPLETED');
    const later = (await s.dataSource.getRepository(PartnerEvent).findBy({ partnerId })).filter((e) => e.type !== 'order.created');
    assert.ok(later.length >= 1, 'the fulfilment wrote events');
    for (const event of later) assert.equal(event.requestId, requestId, `${event.type} records the request that caused it`);
  });
});
