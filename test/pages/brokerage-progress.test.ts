import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { revokeProgressLink } from '../../src/brokerage/moves';
import { caseRow, moveThrough, openCase } from '../helpers/brokerage';
import { launchBrowser, screenshots } from '../helpers/browser';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { Partner } from '../../src/db/entities/partner';

function money(cents: number): string {
  return new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(cents / 100);
}

describe("the buyer's brokerage progress page, in Chromium (CONTRACT §10)", function () {
  ownTemporal();
  this.timeout(120_000);
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it('shows the status in words, the timeline with times and what happens next, before and after completion, and nothing of the partner\'s money', async () => {
    const s = getStack();
    const { client, partnerId } = await newPartner();
    await s.dataSource.getRepository(Partner).update({ id: partnerId }, { commissionBrokerageBps: 3000 });
    const c = await openCase(client, { tier: 'managed', budget_cents: 777_700 });
    await moveThrough(c.case_id, ['researching', 'owner_contacted']);

    const page = await browser.newPage();
    const response = await page.goto(c.progress_url);
    assert.equal(response?.status(), 200);
    assert.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    assert.match(response?.headers()['content-security-policy'] ?? '', /frame-ancestors 'none'/);
    assert.equal(response?.headers()['referrer-policy'], 'no-referrer');
    assert.equal(response?.headers()['cache-control'], 'no-store');
    await page.getByRole('heading', { name: `Acquiring ${c.domain}` }).waitFor();
    assert.equal(await page.getByRole('status').innerText(), 'Status: Owner contacted');
    const steps = page.getByRole('list', { name: 'Timeline' }).getByRole('listitem');
    assert.equal(await steps.count(), 3);
    assert.match(await steps.nth(0).innerText(), /Request received\s+\d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC/);
    assert.match(await steps.nth(2).innerText(), /Owner contacted/);
    assert.equal(await steps.nth(2).getAttribute('aria-current'), 'step');
    assert.match(await page.getByRole('heading', { name: 'What happens next' }).locator('xpath=following-sibling::p[1]').innerText(), /follow up after 3, 7 and 14 days/);
    await screenshots(page, 'brokerage-progress-open');

    await moveThrough(c.case_id, ['negotiating', { to: 'agreed', price_cents: 2_500_000 }, 'payment_secured', 'transferring', 'completed']);
    const row = await caseRow(c.case_id);
    await page.reload();
    assert.equal(await page.getByRole('status').innerText(), 'Status: Completed');
    assert.equal(await steps.count(), 8);
    assert.match(await page.locator('#next').innerText(), /The name is yours/);
    const text = await page.locator('body').innerText();
    assert.ok(text.includes(money(2_500_000)), 'the buyer sees the agreed price');
    for (const hidden of [row.feeCents!, row.partnerShareCents!, 777_700]) {
      assert.ok(!text.includes(money(hidden)) && !text.includes(String(hidden)), `the page shows nothing of ${hidden}`);
    }
    // Whole words: the case id is random hex, which may hold `fee` (brk_55496a72fee0…).
    assert.doesNotMatch(text, /\b(fees?|shares?|commissions?|budgets?)\b/i);
    await screenshots(page, 'brokerage-progress-completed');
    await page.close();
  });

  it('a tampered link shows no case (404); a revoked link shows a withdrawn page (410) while the new one works', async () => {
    const s = getStack();
    const { client } = await newPartner();
    const c = await openCase(client);
    const page = await browser.newPage();

    const token = new URL(c.progress_url).searchParams.get('t')!;
    const tampered = new URL(c.progress_url);
    tampered.searchParams.set('t', token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA'));
    let res = await page.goto(tampered.toString());
    assert.equal(res?.status(), 404);
    await page.getByRole('heading', { name: 'This progress link is not valid' }).waitFor();
    assert.ok(!(await page.content()).includes(c.domain), 'no case is shown');
    res = await page.goto(c.progress_url.replace(/\?t=.*/, '?t=brk_nonsense'));
    assert.equal(res?.status(), 404);
    await screenshots(page, 'brokerage-progress-invalid');

    await revokeProgressLink(s.dataSource, c.case_id);
    res = await page.goto(c.progress_url);
    assert.equal(res?.status(), 410);
    await page.getByRole('heading', { name: 'This progress link has been withdrawn' }).waitFor();
    assert.ok(!(await page.content()).includes(c.domain), 'no case is shown');

    const fresh = (await client.get<{ progress_url: string }>(`/api/partner/v1/brokerage/${c.case_id}`)).body.progress_url;
    assert.notEqual(fresh, c.progress_url);
    assert.equal((await page.goto(fresh))?.status(), 200);
    await page.close();
  });
});
