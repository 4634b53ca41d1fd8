/**
 * Partners apply, get sandbox keys and go live after an operator's approval; buyers and partners
 * hear from us by email (CONTRACT §16). Through the real parts: the pages in Chromium, the API
 * signed, the admin command line as a process, the workflows on the time-skipping server, and
 * what was sent read back from the suite's Mailpit.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { createMailActivities } from '../../activities/mail';
import { PartnerClient } from '../../src/client/partner-client';
import { Email } from '../../src/db/entities/email';
import { Partner } from '../../src/db/entities/partner';
import { PartnerApplication } from '../../src/db/entities/partner-application';
import { queueEmail, SANDBOX_BUYER_EMAILS_PER_DAY } from '../../src/mail/outbox';
import { smtpTransport } from '../../src/mail/send';
import { emailWorkflowId, onboardingWorkflowId, webhookWorkflowId } from '../../workflows/messages';
import { recordHistory } from '../helpers/histories';
import { onboardingStageQuery } from '../../workflows/partner-onboarding';
import { overdueLiveRequests, recordApplication } from '../../src/partners/onboarding';
import { createActivities } from '../../activities';
import { recoverySweepRound } from '../../src/metrics/metrics';
import { MockActivityEnvironment } from '@temporalio/testing';
import { workflowStarters } from '../../src/temporal/starters';
import { admin } from '../helpers/admin';
import { openCase, moveThrough } from '../helpers/brokerage';
import { launchBrowser, screenshots } from '../helpers/browser';
import { openCheckoutForm } from '../helpers/checkout-form';
import { emailTo, linkIn, messagesTo } from '../helpers/mailpit';
import { freshDomain } from '../helpers/orders';
import { startReceiver } from '../helpers/receiver';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const unique = () => randomBytes(4).toString('hex');

/** No email the service sent holds a secret of any credential. */
async function assertNoSecretIn(address: string): Promise<void> {
  for (const m of await messagesTo(address)) {
    assert.doesNotMatch(`${m.Text}\n${m.HTML}`, /sk_(test|live)_/, `"${m.Subject}" holds no secret`);
  }
}

describe("partners' onboarding and the service's email (CONTRACT §16)", function () {
  ownTemporal();
  this.timeout(180_000);
  let browser: Browser;
  before(async function () {
    if (!getStack().mail) this.skip();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it('in Chromium: apply, verify through the emailed link, see the sandbox credential once, call the API, ask for live, and after admin partner approve see the live credential once', async () => {
    const s = getStack();
    const company = `Acme Domains ${unique()}`;
    const contact = `founder-${unique()}@acme.test`;
    const page = await browser.newPage();

    // The form: every field wrong at once is answered beside each field, and nothing is recorded.
    const before = await s.dataSource.getRepository(PartnerApplication).count();
    await page.goto(`${s.baseUrl}/partners/apply`);
    await page.getByLabel('Website').fill('http://not-https.example');
    const refused = page.waitForResponse((r) => r.url().endsWith('/partners/apply') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Apply' }).click();
    assert.equal((await refused).status(), 422);
    await page.getByRole('alert').waitFor();
    assert.match(await page.locator('#company_name-error').innerText(), /Enter your company/);
    assert.match(await page.locator('#contact_email-error').innerText(), /email address/);
    assert.match(await page.locator('#website-error').innerText(), /https address/);
    assert.match(await page.locator('#description-error').innerText(), /what you will build/i);
    assert.equal(await s.dataSource.getRepository(PartnerApplication).count(), before, 'nothing recorded');
    await screenshots(page, 'partner-apply-errors');

    await page.getByLabel('Company name').fill(company);
    await page.getByLabel('Contact email').fill(contact);
    await page.getByLabel('Website').fill('https://acme.test');
    await page.getByLabel('What you will build').fill('Domain search and checkout inside our website builder.');
    await page.getByLabel('We charge our own buyers (merchant of record)').check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    await screenshots(page, 'partner-apply-sent');
    const application = await s.dataSource.getRepository(PartnerApplication).findOneByOrFail({ contactEmail: contact });
    assert.equal(application.status, 'applied');
    const onboarding = s.env.client.workflow.getHandle(onboardingWorkflowId(application.id));
    assert.equal(await onboarding.query(onboardingStageQuery), 'applied');

    // The email: a single-use link, no secret.
    const verification = await emailTo(contact, /Confirm your email/);
    assert.ok(verification.HTML.length > 0 && verification.Text.length > 0, 'a plain-text and an HTML part');
    const verifyLink = linkIn(verification, `${s.baseUrl}/partners/verify?t=`);
    // A link scanner opening it first does not use it up.
    assert.equal((await fetch(verifyLink, { headers: { 'user-agent': 'Googlebot/2.1 (+http://www.google.com/bot.html)' } })).status, 200);

    const shown = await page.goto(verifyLink);
    assert.equal(shown?.status(), 200);
    assert.equal(shown?.headers()['cache-control'], 'no-store');
    assert.equal(shown?.headers()['referrer-policy'], 'no-referrer');
    await page.getByRole('heading', { name: 'Your sandbox credential' }).waitFor();
    const keyId = (await page.locator('#key-id').innerText()).trim();
    const secret = (await page.locator('#secret').innerText()).trim();
    assert.match(keyId, /^pk_test_/);
    assert.match(secret, /^sk_test_/);
    assert.match(await page.locator('#try-it').innerText(), /partner-api call GET/);
    await screenshots(page, 'partner-sandbox-credential');
    // Once: the same link again shows no secret.
    const again = await page.goto(verifyLink);
    assert.equal(again?.status(), 410);
    assert.ok(!(await page.content()).includes(secret));
    await page.getByRole('heading', { name: 'This link was already used' }).waitFor();

    // The credential works, with the scopes of the contract.
    const sandbox = new PartnerClient(s.baseUrl, { keyId, secret });
    assert.equal((await sandbox.get('/api/partner/v1/domains/search?q=coffee')).status, 200);
    const partner = await s.dataSource.getRepository(Partner).findOneByOrFail({ name: company });
    assert.equal(partner.merchantOfRecord, true);
    assert.equal(partner.contactEmail, contact);
    const ready = await emailTo(contact, /sandbox credential is ready/);
    assert.ok(ready.Text.includes(keyId));

    // Asking for live: the checklist, the same request when asked again.
    const asked = await sandbox.request<{ status: string; checklist: Array<{ item: string; done: boolean }> }>('POST', '/api/partner/v1/live-access');
    assert.equal(asked.status, 202, asked.text);
    assert.deepEqual(asked.body, { status: 'in_review', checklist: [{ item: 'sandbox_order_completed', done: false }, { item: 'webhook_endpoint_verified', done: false }] });
    assert.deepEqual((await sandbox.request('POST', '/api/partner/v1/live-access')).body, asked.body);
    await waitFor(() => onboarding.query(onboardingStageQuery), (stage) => stage === 'live_requested', 10_000, 'the workflow at live_requested');

    const listed = await admin('partner', 'applications', '--status', 'live_requested', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    const mine = (JSON.parse(listed.stdout) as Array<{ partner: string; status: string; checklist: unknown[]; history: Array<{ step: string }> }>).find((a) => a.partner === company);
    assert.ok(mine, 'the request is listed');
    assert.deepEqual(mine.history.map((h) => h.step), ['applied', 'verified', 'live_requested']);

    const approved = await admin('partner', 'approve', '--partner', company, '--scopes', 'search,buy', '--json');
    assert.equal(approved.code, 0, approved.stderr);
    const decision = JSON.parse(approved.stdout) as { status: string; live_key_id: string; scopes: string[]; emailed_to: string };
    assert.equal(decision.status, 'approved');
    assert.deepEqual(decision.scopes, ['search', 'buy']);
    assert.equal(decision.emailed_to, contact);
    assert.equal(await onboarding.result(), 'approved');
    await recordHistory(onboardingWorkflowId(application.id), 'partner-onboarding-approved');

    const liveEmail = await emailTo(contact, /Live access approved/);
    const liveLink = linkIn(liveEmail, `${s.baseUrl}/partners/live-credential?t=`);
    assert.equal((await page.goto(liveLink))?.status(), 200);
    await page.getByRole('heading', { name: 'Your live credential' }).waitFor();
    const liveKeyId = (await page.locator('#key-id').innerText()).trim();
    const liveSecret = (await page.locator('#secret').innerText()).trim();
    assert.equal(liveKeyId, decision.live_key_id);
    assert.match(liveSecret, /^sk_live_/);
    await screenshots(page, 'partner-live-credential');
    assert.equal((await page.goto(liveLink))?.status(), 410, 'the live credential is shown once');
    assert.ok(!(await page.content()).includes(liveSecret));

    const live = new PartnerClient(s.baseUrl, { keyId: liveKeyId, secret: liveSecret });
    assert.equal((await live.get('/api/partner/v1/domains/search?q=coffee')).status, 200, 'the live credential works');
    const liveAsk = await live.request<{ error: { code: string } }>('POST', '/api/partner/v1/live-access');
    assert.equal(liveAsk.status, 403);
    assert.equal(liveAsk.body.error.code, 'sandbox_only');
    assert.equal((await sandbox.request<{ status: string }>('POST', '/api/partner/v1/live-access')).body.status, 'approved');
    await assertNoSecretIn(contact);
    await page.close();
  });

  it('an operator rejects with a reason, which is emailed; a partner an operator created is reviewed too (its live link answered to the operator)', async () => {
    const s = getStack();
    const contact = `ops-${unique()}@partner.test`;
    const { client, partnerId } = await newPartner({ environment: 'sandbox' });
    const partner = await s.dataSource.getRepository(Partner).findOneByOrFail({ id: partnerId });
    await s.dataSource.getRepository(Partner).update({ id: partnerId }, { contactEmail: contact, merchantOfRecord: false });
    const asked = await client.request<{ status: string; checklist: Array<{ item: string }> }>('POST', '/api/partner/v1/live-access');
    assert.equal(asked.status, 202);
    assert.deepEqual(asked.body.checklist.map((c) => c.item), ['sandbox_order_completed', 'webhook_endpoint_verified', 'sandbox_checkout_paid'], 'not merchant of record: a paid sandbox checkout too');
    const rejected = await admin('partner', 'reject', '--partner', partner.name, '--reason', 'Finish a sandbox order first.', '--json');
    assert.equal(rejected.code, 0, rejected.stderr);
    assert.equal((JSON.parse(rejected.stdout) as { status: string }).status, 'rejected');
    const email = await emailTo(contact, /request for live access/);
    assert.match(email.Text, /Finish a sandbox order first\./);
    assert.equal((await client.request<{ status: string }>('POST', '/api/partner/v1/live-access')).body.status, 'rejected', 'asked again: the same request');
    const audit = await admin('audit', '--json');
    assert.match(audit.stdout, /partner reject/);

    // No contact email: the approval's single-use link goes to the operator.
    const { client: quiet, partnerId: quietId } = await newPartner();
    await quiet.request('POST', '/api/partner/v1/live-access');
    const quietName = (await s.dataSource.getRepository(Partner).findOneByOrFail({ id: quietId })).name;
    const approved = await admin('partner', 'approve', '--partner', quietName, '--json');
    assert.equal(approved.code, 0, approved.stderr);
    const answer = JSON.parse(approved.stdout) as { emailed_to: null; reveal_url: string };
    assert.equal(answer.emailed_to, null);
    const revealed = await fetch(answer.reveal_url.replace(/^https?:\/\/[^/]+/, s.baseUrl), { headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0' } });
    assert.equal(revealed.status, 200);
    assert.match(await revealed.text(), /sk_live_/);
  });

  it('a paid hosted checkout emails its buyer a receipt; a brokerage case emails its buyer on opening and on each move, with the progress link', async () => {
    const s = getStack();
    const { client } = await newPartner();
    const buyer = `buyer-${unique()}@example.com`;
    const domain = await freshDomain();
    const session = await client.post<{ checkout_url: string; session_id: string }>('/api/partner/v1/checkout-session', { domain: domain.name, success_url: 'https://partner.example/thanks' });
    assert.equal(session.status, 201, session.text);
    const form = await openCheckoutForm(session.body.checkout_url, { buyer: { name: 'Jo Buyer', email: buyer } });
    assert.equal((await form.pay('4242424242424242')).status, 303);
    const receipt = await emailTo(buyer, /^Receipt: /);
    const orderId = (await client.get<{ order_id: string }>(`/api/partner/v1/checkout-session/${session.body.session_id}`)).body.order_id;
    assert.match(receipt.Subject, new RegExp(domain.name.replace(/\./g, '\\.')));
    assert.ok(receipt.Text.includes(orderId), 'the order id');
    assert.ok(receipt.Text.includes(new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(domain.price / 100)), 'the amount');
    assert.match(receipt.Text, /What happens next/);
    assert.doesNotMatch(receipt.Text, /4242/, 'no card number');
    // Marked sent once the mail server took it (the commit follows its answer).
    const receiptRow = await waitFor(() => s.dataSource.getRepository(Email).findOneByOrFail({ key: `checkout-receipt:${session.body.session_id}` }), (row) => row.status === 'sent', 10_000, 'the receipt marked sent');
    await waitFor(async () => (await s.env.client.workflow.getHandle(emailWorkflowId(receiptRow.id)).describe()).status.name, (status) => status === 'COMPLETED', 10_000, 'the email workflow completed');
    await recordHistory(emailWorkflowId(receiptRow.id), 'email-sent');

    const caseBuyer = `case-${unique()}@example.com`;
    const c = await openCase(client, { tier: 'managed', buyer_email: caseBuyer });
    const opened = await emailTo(caseBuyer, /request was received/);
    assert.ok(opened.Text.includes(c.progress_url), 'the progress link');
    await moveThrough(c.case_id, ['researching']);
    const moved = await emailTo(caseBuyer, /researching/);
    assert.ok(moved.Text.includes(c.progress_url));
    assert.equal((await fetch(c.progress_url)).status, 200, 'the link opens the progress page');
    assert.equal((await messagesTo(caseBuyer)).length, 2, 'one email per business event');
  });

  it('a retried send sends nothing twice; a mail server that does not answer delays the email (kept, retried), never the step that queued it', async () => {
    const s = getStack();
    const to = `retry-${unique()}@example.com`;
    const emailId = (await s.dataSource.transaction((tx) => queueEmail(tx, { key: `test:${unique()}`, kind: 'live_rejected', to, data: { companyName: 'Retry Co', reason: 'testing retries' } })))!;
    const down = createMailActivities({ dataSource: s.dataSource, masterKey: s.masterKey, mail: { transport: smtpTransport('smtp://127.0.0.1:9'), from: 'x <no-reply@marketplace.test>', publicBaseUrl: s.baseUrl } });
    await assert.rejects(down.sendEmail({ emailId }));
    const waiting = await s.dataSource.getRepository(Email).findOneByOrFail({ id: emailId });
    assert.equal(waiting.status, 'pending');
    assert.equal(waiting.attempts, 1);
    assert.ok(waiting.lastError);

    const up = createMailActivities({ dataSource: s.dataSource, masterKey: s.masterKey, mail: { transport: s.mail!.transport, from: 'x <no-reply@marketplace.test>', publicBaseUrl: s.baseUrl } });
    // Two attempts at once: one sends, the other finds it sent or being sent (and would retry).
    const outcomes = await Promise.allSettled([up.sendEmail({ emailId }), up.sendEmail({ emailId })]);
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled' && o.value === 'sent').length, 1, JSON.stringify(outcomes));
    const other = outcomes.find((o) => !(o.status === 'fulfilled' && o.value === 'sent'))!;
    assert.ok(other.status === 'fulfilled' ? other.value === 'already_sent' : /being sent by another attempt/.test(String(other.reason)), JSON.stringify(other));
    assert.equal(await up.sendEmail({ emailId }), 'already_sent');
    // Queued again for the same business event: still one email.
    assert.equal(await s.dataSource.transaction((tx) => queueEmail(tx, { key: waiting.key, kind: 'live_rejected', to, data: { companyName: 'Retry Co', reason: 'again' } })), undefined);
    await waitFor(() => messagesTo(to), (list) => list.length >= 1, 10_000, 'the email');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await messagesTo(to)).length, 1, 'sent once');
  });

  it("a sandbox partner's buyer emails stop at 100 a day (a credential from the public form cannot mail the world); live ones do not", async () => {
    const s = getStack();
    const { partnerId } = await newPartner();
    const queue = (i: number, sandbox: boolean) =>
      s.dataSource.transaction((tx) =>
        queueEmail(tx, { key: `cap:${partnerId}:${sandbox}:${i}`, kind: 'live_rejected', to: `cap-${i}@example.com`, data: { companyName: 'x', reason: 'y' }, ...(sandbox ? { sandboxPartnerId: partnerId } : {}) }),
      );
    for (let i = 0; i < SANDBOX_BUYER_EMAILS_PER_DAY; i++) assert.ok(await queue(i, true));
    assert.equal(await queue(SANDBOX_BUYER_EMAILS_PER_DAY, true), undefined, 'the 101st of the day is not queued');
    assert.ok(await queue(0, false), 'other emails are not counted against it');
    // Sent by nobody: these rows are the test's own.
    await s.dataSource.getRepository(Email).update({ partnerId }, { status: 'failed' });
  });

  it('a process that dies after recording an application loses neither its email nor its workflow: the recovery sweep starts both a minute on', async () => {
    const s = getStack();
    const contact = `crash-${unique()}@acme.test`;
    // What the page does up to its commit, and nothing after (the process died).
    const id = (await recordApplication(s.dataSource, { companyName: `Crash Co ${unique()}`, contactEmail: contact, website: 'https://crash.test', description: 'x', merchantOfRecord: true }))!;
    await s.dataSource.query(`UPDATE partner_applications SET created_at = now() - interval '2 minutes' WHERE id = $1`, [id]);
    await s.dataSource.query(`UPDATE emails SET created_at = now() - interval '2 minutes' WHERE key = $1`, [`application-verification:${id}`]);
    const sweep = createActivities({ dataSource: s.dataSource, masterKey: s.masterKey, starters: workflowStarters({ client: s.env.client, taskQueue: s.taskQueue }, s.dataSource) });
    const before = Date.now() / 1000;
    assert.ok(((await new MockActivityEnvironment().run(sweep.wakeLateDeliveries)) as number) >= 2);
    const round = (await recoverySweepRound.get()).values[0]?.value ?? 0;
    assert.ok(round >= before - 1, "the round's end is the operators' gauge (alert RecoverySweepStalled)");
    await emailTo(contact, /Confirm your email/);
    assert.equal(await s.env.client.workflow.getHandle(onboardingWorkflowId(id)).query(onboardingStageQuery), 'applied');
    assert.ok((await s.dataSource.getRepository(PartnerApplication).findOneByOrFail({ id })).workflowStartedAt, 'marked started');
    // A second round starts nothing again and sends nothing twice.
    await new MockActivityEnvironment().run(sweep.wakeLateDeliveries);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await messagesTo(contact)).length, 1);
  });

  it("a partner's endpoint failing every delivery for 24 hours emails its contact once, and again when it is disabled after 3 days", async () => {
    const s = getStack();
    const contact = `hooks-${unique()}@partner.test`;
    const receiver = await startReceiver(() => 500);
    try {
      const { client, partnerId } = await newPartner();
      await s.dataSource.getRepository(Partner).update({ id: partnerId }, { contactEmail: contact });
      // A token in the endpoint's address, as partners often put one: never in an email.
      assert.equal((await client.request('PUT', '/api/partner/webhooks', { body: { url: `${receiver.url}?token=tok-s3cret-41`, secret: 'whsec_dGVzdC1kZWxpdmVyeS1zZWNyZXQtMjRi' } })).status, 200);
      await openCase(client, { tier: 'managed' });
      await waitFor(() => receiver.received.length, (n) => n >= 1, 30_000, 'a first attempt');
      await s.env.sleep('23 hours');
      assert.equal((await messagesTo(contact)).length, 0, 'not before 24 hours');
      await s.env.sleep('2 hours');
      const failing = await emailTo(contact, /failed for 24 hours/);
      assert.ok(failing.Text.includes(new URL(receiver.url).origin), 'the endpoint, by its origin');
      assert.ok(!failing.Text.includes('tok-s3cret-41') && !failing.HTML.includes('tok-s3cret-41'), 'not its path or query, which may hold a token');
      await s.env.sleep('10 hours');
      await s.env.sleep('1 day');
      await s.env.sleep('1 day');
      const disabled = await emailTo(contact, /was disabled/, 60_000);
      assert.match(disabled.Text, /Register the endpoint again/);
      assert.ok(!disabled.Text.includes('tok-s3cret-41'));
      const subjects = (await messagesTo(contact)).map((m) => m.Subject).sort();
      assert.equal(subjects.length, 2, `one email each: ${subjects.join(' | ')}`);
      await recordHistory(webhookWorkflowId(partnerId, 'sandbox'), 'webhook-delivery-failing-email');
    } finally {
      await receiver.close();
    }
  });

  it('an application unverified for 7 days expires (its link then shows no credential); a live request waiting 2 days reminds the operators', async () => {
    const s = getStack();
    const contact = `late-${unique()}@acme.test`;
    const page = await browser.newPage();
    await page.goto(`${s.baseUrl}/partners/apply`);
    await page.getByLabel('Company name').fill(`Late Co ${unique()}`);
    await page.getByLabel('Contact email').fill(contact);
    await page.getByLabel('Website').fill('https://late.test');
    await page.getByLabel('What you will build').fill('A registrar storefront.');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    const app = await s.dataSource.getRepository(PartnerApplication).findOneByOrFail({ contactEmail: contact });
    const link = linkIn(await emailTo(contact, /Confirm your email/), `${s.baseUrl}/partners/verify?t=`);
    await s.env.sleep('7 days');
    assert.equal(await s.env.client.workflow.getHandle(onboardingWorkflowId(app.id)).result(), 'expired');
    await recordHistory(onboardingWorkflowId(app.id), 'partner-onboarding-expired');
    assert.equal((await s.dataSource.getRepository(PartnerApplication).findOneByOrFail({ id: app.id })).status, 'expired');
    const opened = await page.goto(link);
    assert.equal(opened?.status(), 410);
    assert.doesNotMatch(await page.content(), /sk_test_/);
    await page.close();

    const { client, partnerId } = await newPartner();
    assert.equal((await client.request('POST', '/api/partner/v1/live-access')).status, 202);
    const request = await s.dataSource.getRepository(PartnerApplication).findOneByOrFail({ partnerId });
    const handle = s.env.client.workflow.getHandle(onboardingWorkflowId(request.id));
    await s.env.sleep('47 hours');
    assert.equal((await s.dataSource.getRepository(PartnerApplication).findOneByOrFail({ id: request.id })).remindedAt, null, 'not before 2 days');
    await s.env.sleep('2 hours');
    await waitFor(() => handle.query(onboardingStageQuery), (stage) => stage.includes('reminded'), 10_000, 'the operators reminded');
    assert.ok((await s.dataSource.getRepository(PartnerApplication).findOneByOrFail({ id: request.id })).remindedAt);
    assert.ok((await overdueLiveRequests(s.dataSource)) >= 1, 'the gauge counts it');
    const name = (await s.dataSource.getRepository(Partner).findOneByOrFail({ id: partnerId })).name;
    assert.equal((await admin('partner', 'approve', '--partner', name, '--json')).code, 0);
    assert.equal(await handle.result(), 'approved');
    await recordHistory(onboardingWorkflowId(request.id), 'partner-onboarding-reminded');
  });
});
