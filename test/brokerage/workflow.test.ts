import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { createBrokerageActivities } from '../../activities/brokerage';
import { Partner } from '../../src/db/entities/partner';
import { reconcile } from '../../src/finance/reconcile';
import { runPayouts } from '../../src/finance/payouts';
import { bookBrokerageDeal } from '../../src/finance/sales';
import type { CaseMove, CaseStatus } from '../../workflows/brokerage-messages';
import { BusinessStatus } from '../../workflows/search-attributes';
import { caseHandle, caseRow, caseState, CASE_ROW_MS, move, moveThrough, openCase, type CaseBody } from '../helpers/brokerage';
import { recordHistory } from '../helpers/histories';
import { waitFor } from '../helpers/wait';
import { count } from '../helpers/orders';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { admin } from '../helpers/admin';



async function caseEvents(client: Awaited<ReturnType<typeof newPartner>>['client'], caseId: string): Promise<Array<{ type: string; data: { status: string } }>> {
  const page = await client.get<{ data: Array<{ type: string; data: { case_id?: string; status: string } }> }>('/api/partner/v1/events?limit=100');
  return page.body.data.filter((e) => e.data.case_id === caseId);
}

/** The move is refused by the Update's validator with `reason`, and nothing about the case changes. */
async function refused(caseId: string, m: CaseMove, reason: RegExp, ended = false): Promise<void> {
  const before = { row: await caseRow(caseId), state: await caseState(caseId), timeline: await count('SELECT 1 FROM brokerage_timeline t JOIN brokerage_cases c ON c.id = t.case_id WHERE c.public_id = $1', [caseId]) };
  await assert.rejects(move(caseId, m), (err: unknown) => {
    // Once final, the workflow has ended: no Update reaches it (the admin command says why from the case).
    if (ended) return err instanceof WorkflowNotFoundError;
    assert.ok(err instanceof WorkflowUpdateFailedError, String(err));
    assert.match((err.cause as Error).message, reason);
    return true;
  });
  assert.deepEqual(await caseRow(caseId), before.row);
  assert.deepEqual(await caseState(caseId), before.state);
  assert.equal(await count('SELECT 1 FROM brokerage_timeline t JOIN brokerage_cases c ON c.id = t.case_id WHERE c.public_id = $1', [caseId]), before.timeline);
}

describe('brokerage case workflow: moves, timers and money (CONTRACT §10, §8)', () => {
  ownTemporal();
  it('a managed case moves through every status (with a deal that falls through once) to completed: outcome, one brokerage transaction, the share paid by the next payout, events in order, reconcile ok', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    await s.dataSource.getRepository(Partner).update({ id: partnerId }, { commissionBrokerageBps: 2500 });
    const c = await openCase(client, { tier: 'managed' });
    // A later change of the partner's rate does not alter the case: its rate was fixed when it opened.
    await s.dataSource.getRepository(Partner).update({ id: partnerId }, { commissionBrokerageBps: 100 });

    await moveThrough(c.case_id, ['researching', 'owner_contacted', 'negotiating', { to: 'agreed', price_cents: 900_000 }, { to: 'negotiating', reason: 'the owner asked for more' }]);
    const agreed = await move(c.case_id, { to: 'agreed', price_cents: 1_234_567 });
    assert.deepEqual([agreed.status, agreed.price_cents], ['agreed', 1_234_567]);
    assert.equal((await caseHandle(c.case_id).describe()).typedSearchAttributes.get(BusinessStatus), 'agreed');
    await moveThrough(c.case_id, ['payment_secured', 'transferring', 'completed']);
    assert.deepEqual(await caseHandle(c.case_id).result(), { status: 'completed' });
    await recordHistory(`brokerage:${c.case_id}`, 'brokerage-completed');

    const fee = Math.floor((1_234_567 * 1500) / 10_000); // managed: 15 %
    const share = Math.floor((fee * 2500) / 10_000);
    const view = (await client.get<CaseBody>(`/api/partner/v1/brokerage/${c.case_id}`)).body;
    assert.equal(view.status, 'completed');
    assert.deepEqual(view.timeline.map((t) => t.status), ['requested', 'researching', 'owner_contacted', 'negotiating', 'agreed', 'negotiating', 'agreed', 'payment_secured', 'transferring', 'completed']);
    assert.equal(view.timeline[5].detail, 'the owner asked for more');
    assert.deepEqual(view.outcome, { result: 'acquired', price_cents: 1_234_567, fee_cents: fee, partner_share_cents: share, closed_at: view.timeline[9].at });
    for (let i = 1; i < view.timeline.length; i++) assert.ok(view.timeline[i].at >= view.timeline[i - 1].at);

    assert.deepEqual((await caseEvents(client, c.case_id)).map((e) => e.type), [
      'brokerage.case_opened',
      'brokerage.researching',
      'brokerage.owner_contacted',
      'brokerage.negotiating',
      'brokerage.agreed',
      'brokerage.negotiating',
      'brokerage.agreed',
      'brokerage.payment_secured',
      'brokerage.transferring',
      'brokerage.case_completed',
    ]);

    const txns = (await client.get<{ data: Array<Record<string, unknown>>; totals: { gmv_cents: number; commission_cents: number } }>('/api/partner/v1/transactions?payment_model=brokerage')).body;
    assert.equal(txns.data.length, 1);
    assert.deepEqual(
      [txns.data[0].payment_model, txns.data[0].order_id, txns.data[0].domain, txns.data[0].gross_cents, txns.data[0].commission_cents, txns.data[0].status],
      ['brokerage', null, c.domain, 1_234_567, share, 'completed'],
    );
    assert.deepEqual([txns.totals.gmv_cents, txns.totals.commission_cents], [1_234_567, share]);

    const payouts = await runPayouts(s.dataSource, 'sandbox', new Date());
    const mine = payouts.find((p) => p.amount_cents === share && p.breakdown.brokerage_cents === share);
    assert.ok(mine, JSON.stringify(payouts));
    assert.equal(mine.breakdown.service_collected_cents, 0);
    assert.equal((await client.get<{ data: Array<{ payout_id: string }> }>('/api/partner/v1/payouts')).body.data[0].payout_id, mine.payout_id);
    const report = await reconcile(s.dataSource);
    assert.ok(report.ok, JSON.stringify(report.differences));
  });

  it('a retried completion books the deal once (one transaction, one posting)', async () => {
    const s = getStack();
    const { client } = await newPartner();
    const c = await openCase(client, { tier: 'self_serve' });
    await moveThrough(c.case_id, ['researching', 'owner_contacted', 'negotiating', { to: 'agreed', price_cents: 100_001 }, 'payment_secured', 'transferring', 'completed']);
    const row = await caseRow(c.case_id);
    assert.equal(row.feeCents, Math.floor((100_001 * 800) / 10_000)); // self_serve: 8 %
    // The activity run again with the workflow's own input (what Temporal does on a retry).
    const at = (await client.get<CaseBody>(`/api/partner/v1/brokerage/${c.case_id}`)).body.timeline.at(-1)!.at;
    const activities = createBrokerageActivities({ dataSource: s.dataSource });
    assert.deepEqual(await activities.applyCaseMove({ caseId: row.id, seq: 8, from: 'transferring', to: 'completed', at, priceCents: null, reason: null, by: 'operator' }), { status: 'completed', priceCents: 100_001 });
    assert.equal(await s.dataSource.transaction((tx) => bookBrokerageDeal(tx, row, { priceCents: 100_001, feeCents: row.feeCents!, partnerShareCents: row.partnerShareCents! }, new Date(at))), false);
    assert.equal(await count('SELECT 1 FROM transactions WHERE brokerage_case_id = $1', [row.id]), 1);
    assert.equal(await count(`SELECT 1 FROM ledger_postings WHERE idempotency_key = $1`, [`brokerage:${row.id}:completed`]), 1);
    assert.equal(await count('SELECT 1 FROM events WHERE dedupe_key = $1', [`brokerage:${row.id}:8`]), 1);
    assert.ok((await reconcile(s.dataSource, 'sandbox')).ok);
  });

  it('any status before completed can move to closed (no deal): outcome not_acquired with the reason and brokerage.case_closed', async () => {
    const { client } = await newPartner();
    const paths: CaseMove[][] = [
      [],
      [{ to: 'researching' }],
      [{ to: 'researching' }, { to: 'owner_contacted' }],
      [{ to: 'researching' }, { to: 'owner_contacted' }, { to: 'negotiating' }],
      [{ to: 'researching' }, { to: 'owner_contacted' }, { to: 'negotiating' }, { to: 'agreed', price_cents: 5000 }],
      [{ to: 'researching' }, { to: 'owner_contacted' }, { to: 'negotiating' }, { to: 'agreed', price_cents: 5000 }, { to: 'payment_secured' }],
      [{ to: 'researching' }, { to: 'owner_contacted' }, { to: 'negotiating' }, { to: 'agreed', price_cents: 5000 }, { to: 'payment_secured' }, { to: 'transferring' }],
    ];
    for (const p of paths) {
      const c = await openCase(client);
      await moveThrough(c.case_id, p);
      const closed = await move(c.case_id, { to: 'closed', reason: 'the owner declined' });
      assert.equal(closed.status, 'closed');
      const view = (await client.get<CaseBody>(`/api/partner/v1/brokerage/${c.case_id}`)).body;
      assert.deepEqual(view.outcome, { result: 'not_acquired', reason: 'the owner declined', closed_at: view.timeline.at(-1)!.at });
      assert.equal((await caseEvents(client, c.case_id)).at(-1)!.type, 'brokerage.case_closed');
      assert.deepEqual(await caseHandle(c.case_id).result(), { status: 'closed' });
    }
    const list = (await client.get<{ data: CaseBody[] }>('/api/partner/v1/brokerage')).body.data;
    assert.equal(list.length, paths.length);
    assert.ok(list.every((c) => c.outcome?.result === 'not_acquired'));
    assert.equal(await count(`SELECT 1 FROM transactions t JOIN brokerage_cases c ON c.id = t.brokerage_case_id WHERE c.partner_id = (SELECT partner_id FROM brokerage_cases WHERE public_id = $1)`, [list[0].case_id]), 0);
  });

  it('the move validator refuses impossible moves with the reason, and nothing changes', async () => {
    const { client } = await newPartner();
    const c = await openCase(client);
    await refused(c.case_id, { to: 'negotiating' }, /cannot move from requested to negotiating: from requested it can move only to researching or closed/);
    await refused(c.case_id, { to: 'completed' }, /cannot move from requested to completed/);
    await refused(c.case_id, { to: 'requested' }, /cannot move from requested to requested/);
    await refused(c.case_id, { to: 'sold' as CaseStatus }, /"sold" is not a case status/);
    await refused(c.case_id, { to: 'researching', price_cents: 100 }, /price_cents goes only with a move to agreed/);
    await moveThrough(c.case_id, ['researching', 'owner_contacted', 'negotiating']);
    await refused(c.case_id, { to: 'researching' }, /cannot move from negotiating to researching/);
    await refused(c.case_id, { to: 'agreed' }, /needs the agreed price/);
    await refused(c.case_id, { to: 'agreed', price_cents: 0 }, /needs the agreed price/);
    await refused(c.case_id, { to: 'agreed', price_cents: 12.5 }, /needs the agreed price/);
    await moveThrough(c.case_id, [{ to: 'agreed', price_cents: 700_000 }]);
    await refused(c.case_id, { to: 'transferring' }, /cannot move from agreed to transferring/);
    await moveThrough(c.case_id, ['payment_secured']);
    await refused(c.case_id, { to: 'negotiating' }, /cannot move from payment_secured to negotiating/);
    await moveThrough(c.case_id, ['transferring', 'completed']);
    await refused(c.case_id, { to: 'closed' }, /completed/, true);
    const late = await admin('brokerage', 'move', c.case_id, '--to', 'closed', '--json');
    assert.notEqual(late.code, 0);
    assert.match(late.stderr, /is completed: a completed case does not move any more/);

    const other = await openCase(client);
    await move(other.case_id, { to: 'closed', reason: 'the buyer withdrew' });
    await refused(other.case_id, { to: 'researching' }, /closed/, true);
  });

  it('timers: follow-ups at 3, 7 and 14 days while the owner does not answer, then the quiet case closes itself after 30 days', async () => {
    const s = getStack();
    const { client } = await newPartner();
    const c = await openCase(client);
    await moveThrough(c.case_id, ['researching', 'owner_contacted']);
    assert.equal((await caseState(c.case_id)).next_timer?.action, 'follow_up');

    await s.env.sleep('2 days');
    assert.equal((await caseRow(c.case_id)).followUpsSent, 0);
    await s.env.sleep('1 day');
    await waitFor(() => caseRow(c.case_id), (r) => r.followUpsSent === 1, CASE_ROW_MS, 'the first follow-up (3 days)');
    await s.env.sleep('4 days');
    await waitFor(() => caseRow(c.case_id), (r) => r.followUpsSent === 2, CASE_ROW_MS, 'the second follow-up (7 days)');
    await s.env.sleep('7 days');
    await waitFor(() => caseRow(c.case_id), (r) => r.followUpsSent === 3, CASE_ROW_MS, 'the third follow-up (14 days)');
    assert.equal((await caseRow(c.case_id)).status, 'owner_contacted');
    assert.equal((await caseState(c.case_id)).next_timer?.action, 'close_quiet_case');

    await s.env.sleep('15 days');
    assert.equal((await caseRow(c.case_id)).status, 'owner_contacted', 'not closed before 30 days');
    await s.env.sleep('1 day');
    const closed = await waitFor(() => caseRow(c.case_id), (r) => r.status === 'closed', CASE_ROW_MS, 'closed after 30 quiet days');
    assert.equal(closed.closeReason, 'no activity for 30 days');
    assert.deepEqual(await caseHandle(c.case_id).result(), { status: 'closed' });
    const view = (await client.get<CaseBody>(`/api/partner/v1/brokerage/${c.case_id}`)).body;
    assert.deepEqual(view.outcome, { result: 'not_acquired', reason: 'no activity for 30 days', closed_at: view.timeline.at(-1)!.at });
    const ownerContactedAt = Date.parse(view.timeline[2].at);
    const quiet = Date.parse(view.outcome!.closed_at) - ownerContactedAt;
    assert.ok(quiet >= 30 * 24 * 60 * 60 * 1000 && quiet < 30 * 24 * 60 * 60 * 1000 + 60_000, `closed ${quiet} ms after the last move`);
    await recordHistory(`brokerage:${c.case_id}`, 'brokerage-quiet-closed');
  });

  it('timers: an agreed deal whose payment is not secured within 10 days goes back to negotiating', async () => {
    const s = getStack();
    const { client } = await newPartner();
    const c = await openCase(client);
    await moveThrough(c.case_id, ['researching', 'owner_contacted', 'negotiating', { to: 'agreed', price_cents: 420_000 }]);
    await s.env.sleep('9 days');
    assert.equal((await caseRow(c.case_id)).status, 'agreed');
    await s.env.sleep('1 day');
    const reopened = await waitFor(() => caseRow(c.case_id), (r) => r.status === 'negotiating', CASE_ROW_MS, 'back to negotiating after 10 days');
    assert.equal(reopened.priceCents, null);
    const view = (await client.get<CaseBody>(`/api/partner/v1/brokerage/${c.case_id}`)).body;
    assert.deepEqual(view.timeline.at(-1), { status: 'negotiating', at: view.timeline.at(-1)!.at, detail: 'payment was not secured within 10 days of agreement' });
    assert.equal((await caseEvents(client, c.case_id)).at(-1)!.type, 'brokerage.negotiating');
    // The case can still be agreed and closed by operators; closing ends the workflow.
    await move(c.case_id, { to: 'agreed', price_cents: 400_000 });
    await move(c.case_id, { to: 'closed', reason: 'the buyer withdrew' });
    assert.deepEqual(await caseHandle(c.case_id).result(), { status: 'closed' });
    await recordHistory(`brokerage:${c.case_id}`, 'brokerage-payment-lapsed');
  });

  it('admin brokerage move sends the Update and prints the case; a refused move exits non-zero with the reason; revoke-link gives a new link', async () => {
    const { client } = await newPartner();
    const c = await openCase(client);
    const moved = await admin('brokerage', 'move', c.case_id, '--to', 'researching', '--reason', 'starting research', '--json');
    assert.equal(moved.code, 0, moved.stderr);
    const view = JSON.parse(moved.stdout) as CaseBody;
    assert.equal(view.status, 'researching');
    assert.deepEqual(view.timeline.at(-1)?.detail, 'starting research');

    const wrong = await admin('brokerage', 'move', c.case_id, '--to', 'agreed', '--price-cents', '5000', '--json');
    assert.notEqual(wrong.code, 0);
    assert.equal(wrong.stdout, '');
    assert.match(wrong.stderr, /cannot move from researching to agreed/);
    assert.equal((await caseRow(c.case_id)).status, 'researching');

    const unknown = await admin('brokerage', 'move', 'brk_000000000000000000000000', '--to', 'closed', '--json');
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /no brokerage case/);

    const revoked = await admin('brokerage', 'revoke-link', c.case_id, '--json');
    assert.equal(revoked.code, 0, revoked.stderr);
    const after = JSON.parse(revoked.stdout) as CaseBody;
    assert.notEqual(new URL(after.progress_url).searchParams.get('t'), new URL(c.progress_url).searchParams.get('t'));
    assert.equal((await caseRow(c.case_id)).linkVersion, 2);
    await move(c.case_id, { to: 'closed' });
  });
});
