import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { brokerageCaseWorkflow } from '../../workflows';
import { caseNotOpenedSignal, caseWorkflowId } from '../../workflows/brokerage-messages';
import { brokerableName, openCase, type CaseBody } from '../helpers/brokerage';
import { recordHistory } from '../helpers/histories';
import { count } from '../helpers/orders';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';

type ErrorBody = { error: { code: string; message: string; details?: Array<{ field: string; issue: string }> } };
type Eligibility = { domain: string; eligible: boolean; reason: string | null };

describe('brokerage cases through the API (CONTRACT §10)', () => {
  ownTemporal();
  it('eligibility: an inventory name with an active site, a sandbox name starting site- or live-, and a name in an open case are ineligible; any other name is eligible', async () => {
    const s = getStack();
    const { client } = await newPartner();
    const [{ name: withSite }] = await s.dataSource.query(`SELECT name FROM domains WHERE environment = 'sandbox' AND active_site LIMIT 1`);
    const [{ name: unlistedWithSite }] = await s.dataSource.query(`SELECT name FROM domains WHERE environment = 'sandbox' AND active_site AND status = 'unlisted' LIMIT 1`);
    const [{ name: listedNoSite }] = await s.dataSource.query(`SELECT name FROM domains WHERE environment = 'sandbox' AND NOT active_site AND status = 'listed' LIMIT 1`);
    const ask = async (domain: string) => (await client.get<Eligibility>(`/api/partner/v1/brokerage/eligibility?domain=${encodeURIComponent(domain)}`)).body;

    assert.deepEqual(await ask(withSite), { domain: withSite, eligible: false, reason: 'active_site' });
    assert.deepEqual(await ask(unlistedWithSite), { domain: unlistedWithSite, eligible: false, reason: 'active_site' });
    assert.deepEqual(await ask(listedNoSite), { domain: listedNoSite, eligible: true, reason: null });
    assert.equal((await ask('site-coffee.com')).reason, 'active_site');
    assert.equal((await ask('LIVE-bakery.net')).reason, 'active_site');
    const free = brokerableName();
    assert.deepEqual(await ask(free.toUpperCase()), { domain: free, eligible: true, reason: null });

    await openCase(client, { domain: free });
    assert.deepEqual(await ask(free), { domain: free, eligible: false, reason: 'in_case' });
    // Another environment is another market: live knows nothing of the sandbox case, and brokers verify unknown names there.
    const { client: live } = await newPartner({ environment: 'live' });
    assert.deepEqual((await live.get<Eligibility>(`/api/partner/v1/brokerage/eligibility?domain=${free}`)).body, { domain: free, eligible: true, reason: null });
    assert.equal((await live.get<Eligibility>('/api/partner/v1/brokerage/eligibility?domain=site-coffee.com')).body.eligible, true);

    const bad = await client.get<ErrorBody>('/api/partner/v1/brokerage/eligibility?domain=not_a_name');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'validation_error');
  });

  it('POST /brokerage opens a case: 201 with the case, a requested timeline, a progress link and a brokerage.case_opened event; GET answers it to its partner only', async () => {
    const { client } = await newPartner();
    const domain = brokerableName();
    const c = await openCase(client, { domain: domain.toUpperCase(), tier: 'self_serve', buyer_email: 'ann@example.com', budget_cents: 1_250_000 });
    assert.match(c.case_id, /^brk_[0-9a-f]{24}$/);
    assert.deepEqual(
      [c.domain, c.tier, c.status, c.buyer_email, c.budget_cents, c.currency, c.price_cents, c.outcome],
      [domain, 'self_serve', 'requested', 'ann@example.com', 1_250_000, 'USD', null, null],
    );
    assert.deepEqual(c.timeline.map((t) => t.status), ['requested']);
    assert.equal(c.timeline[0].at, c.created_at);
    assert.match(c.progress_url, /^http:\/\/127\.0\.0\.1:\d+\/brokerage\/progress\?t=brk_/);

    const again = await client.get<CaseBody>(`/api/partner/v1/brokerage/${c.case_id}`);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { ...c, updated_at: again.body.updated_at });

    const { client: other } = await newPartner();
    const theirs = await other.get<ErrorBody>(`/api/partner/v1/brokerage/${c.case_id}`);
    assert.equal(theirs.status, 404);
    assert.equal(theirs.body.error.code, 'not_found');
    assert.equal((await client.get<ErrorBody>('/api/partner/v1/brokerage/brk_000000000000000000000000')).status, 404);

    const events = (await client.get<{ data: Array<{ type: string; data: { case_id?: string; status?: string } }> }>('/api/partner/v1/events?limit=100')).body.data.filter((e) => e.data.case_id === c.case_id);
    assert.deepEqual(events.map((e) => [e.type, e.data.status]), [['brokerage.case_opened', 'requested']]);
  });

  it('an ineligible name is 422 domain_not_eligible with the reason in the message and in details, and opens nothing', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    const [{ name: withSite }] = await s.dataSource.query(`SELECT name FROM domains WHERE environment = 'sandbox' AND active_site LIMIT 1`);
    const res = await client.post<ErrorBody>('/api/partner/v1/brokerage', { domain: withSite, tier: 'managed', buyer_email: 'b@example.com', budget_cents: 100_000 });
    assert.equal(res.status, 422);
    assert.equal(res.body.error.code, 'domain_not_eligible');
    assert.match(res.body.error.message, /active site/);
    assert.deepEqual(res.body.error.details, [{ field: 'body.domain', issue: 'active_site' }]);

    const taken = await openCase(client);
    const second = await client.post<ErrorBody>('/api/partner/v1/brokerage', { domain: taken.domain, tier: 'self_serve', buyer_email: 'c@example.com', budget_cents: 100_000 });
    assert.equal(second.status, 422);
    assert.equal(second.body.error.code, 'domain_not_eligible');
    assert.match(second.body.error.message, /open brokerage case/);
    assert.deepEqual(second.body.error.details, [{ field: 'body.domain', issue: 'in_case' }]);
    assert.equal(await count('SELECT 1 FROM brokerage_cases WHERE partner_id = $1', [partnerId]), 1);
  });

  it('bad input is 400 validation_error, never 500', async () => {
    const { client } = await newPartner();
    const valid = { domain: brokerableName(), tier: 'managed', buyer_email: 'b@example.com', budget_cents: 100_000 };
    for (const [body, field] of [
      [{ ...valid, tier: 'premium' }, 'body.tier'],
      [{ ...valid, buyer_email: 'not-an-email' }, 'body.buyer_email'],
      [{ ...valid, budget_cents: -5 }, 'body.budget_cents'],
      [{ ...valid, budget_cents: 10.5 }, 'body.budget_cents'],
      [{ ...valid, budget_cents: '100' }, 'body.budget_cents'],
      [{ ...valid, domain: 'nope' }, 'body.domain'],
      [{ tier: 'managed', buyer_email: 'b@example.com', budget_cents: 1 }, 'body.domain'],
    ] as const) {
      const res = await client.post<ErrorBody>('/api/partner/v1/brokerage', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, 'validation_error');
      assert.ok(res.body.error.details?.some((d) => d.field === field), `${field} in ${JSON.stringify(res.body.error.details)}`);
    }
    const cursor = await client.get<ErrorBody>('/api/partner/v1/brokerage?cursor=garbage');
    assert.equal(cursor.status, 400);
    assert.equal((await client.get<ErrorBody>('/api/partner/v1/brokerage?limit=101')).status, 400);
  });

  it('two partners racing to open a case on one name get one case: exactly one 201, the other 422 in_case', async () => {
    const s = getStack();
    const domain = brokerableName('race');
    const [a, b] = await Promise.all([newPartner(), newPartner()]);
    const body = { domain, tier: 'managed', buyer_email: 'b@example.com', budget_cents: 300_000 };
    const answers = await Promise.all([a.client.post<CaseBody & ErrorBody>('/api/partner/v1/brokerage', body), b.client.post<CaseBody & ErrorBody>('/api/partner/v1/brokerage', body)]);
    assert.deepEqual(answers.map((r) => r.status).sort(), [201, 422]);
    const lost = answers.find((r) => r.status === 422)!;
    assert.equal(lost.body.error.code, 'domain_not_eligible');
    assert.deepEqual(lost.body.error.details, [{ field: 'body.domain', issue: 'in_case' }]);
    assert.equal(await count(`SELECT 1 FROM brokerage_cases WHERE domain = $1 AND environment = 'sandbox'`, [domain]), 1);

  });

  it("a case's workflow told that its case was never recorded (it lost the race for the name) ends at once", async () => {
    const s = getStack();
    const casePublicId = `brk_${randomBytes(12).toString('hex')}`;
    const handle = await s.env.client.workflow.start(brokerageCaseWorkflow, { workflowId: caseWorkflowId(casePublicId), taskQueue: s.taskQueue, args: [{ caseId: randomUUID(), casePublicId, tier: 'managed' }] });
    await handle.signal(caseNotOpenedSignal);
    assert.deepEqual(await handle.result(), { status: 'not_opened' });
    await recordHistory(handle.workflowId, 'brokerage-not-opened');
  });

  it('GET /brokerage (scope report) lists the partner\'s cases newest first with cursor pagination; scopes are enforced', async () => {
    const { client } = await newPartner();
    const opened: CaseBody[] = [];
    for (let i = 0; i < 3; i++) opened.push(await openCase(client));
    const first = await client.get<{ data: CaseBody[]; next_cursor: string | null }>('/api/partner/v1/brokerage?limit=2');
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.data.map((c) => c.case_id), [opened[2].case_id, opened[1].case_id]);
    assert.ok(first.body.next_cursor);
    const second = await client.get<{ data: CaseBody[]; next_cursor: string | null }>(`/api/partner/v1/brokerage?limit=2&cursor=${first.body.next_cursor}`);
    assert.deepEqual(second.body.data.map((c) => c.case_id), [opened[0].case_id]);
    assert.equal(second.body.next_cursor, null);
    assert.deepEqual(second.body.data[0].timeline.map((t) => t.status), ['requested']);
    assert.equal(second.body.data[0].outcome, null);

    const { client: reporter } = await newPartner({ scopes: ['report'] });
    assert.equal((await reporter.post<ErrorBody>('/api/partner/v1/brokerage', { domain: brokerableName(), tier: 'managed', buyer_email: 'b@example.com', budget_cents: 1 })).status, 403);
    assert.equal((await reporter.get('/api/partner/v1/brokerage')).status, 200);
    const { client: broker } = await newPartner({ scopes: ['broker'] });
    assert.equal((await broker.get<ErrorBody>('/api/partner/v1/brokerage')).body.error.code, 'forbidden');
  });
});
