import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import { ReferralLink, ReferralSale } from '../../src/db/entities/referral';
import { referralWorkflowId } from '../../workflows/messages';
import { completedSale } from '../helpers/money';
import { recordReferredSale } from '../../src/referral/commissions';
import { reconcile } from '../../src/finance/reconcile';
import { affiliatePartner } from '../helpers/referral';
import { getStack, ownTemporal } from '../helpers/stack';
import { workflowStarters } from '../../src/temporal/starters';

describe('the recovery sweep and referred sales', () => {
  ownTemporal();
  it('starts the 30-day window of a referred sale whose workflow a crash left unstarted, once', async () => {
    const s = getStack();
    const { partnerId, client } = await affiliatePartner();
    const link = (await client.post<{ link_id: string }>('/api/partner/v1/links', { kind: 'generic' })).body;
    const order = await completedSale(partnerId, new Date().toISOString(), { paymentModel: 'service_collected' });
    const linkRow = await s.dataSource.getRepository(ReferralLink).findOneByOrFail({ publicId: link.link_id });
    // A referred sale recorded (with its pending line) by a process that died before starting its window.
    const sale = (await s.dataSource.transaction((tx) =>
      recordReferredSale(tx, { linkCode: linkRow.code, environment: 'sandbox', sellerPartnerId: 'another-partner', orderId: order.id, buyerEmail: 'jane@example.com', domain: order.domain, amountCents: order.salePriceCents, currency: 'USD', at: new Date(Date.now() - 5 * 60_000) }),
    ))!;
    assert.equal(sale.workflowStarted, false);
    const activities = createActivities({ dataSource: s.dataSource, masterKey: s.masterKey, starters: workflowStarters({ client: s.env.client, taskQueue: s.taskQueue }, s.dataSource) });
    assert.ok(((await new MockActivityEnvironment().run(activities.startUnstartedReferralWindows, { olderThanSeconds: 60 })) as number) >= 1);
    assert.equal((await s.env.client.workflow.getHandle(referralWorkflowId(sale.publicId)).describe()).status.name, 'RUNNING');
    assert.equal((await s.dataSource.getRepository(ReferralSale).findOneByOrFail({ id: sale.id })).workflowStarted, true);
    assert.equal(await new MockActivityEnvironment().run(activities.startUnstartedReferralWindows, { olderThanSeconds: 60 }), 0, 'nothing left to start');
    assert.ok((await reconcile(s.dataSource)).ok);
  });
});
