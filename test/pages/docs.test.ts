import assert from 'node:assert/strict';
import { errorGuide } from '../../src/api/error-guide';
import { ERROR_STATUS } from '../../src/api/errors';
import { EVENT_DESCRIPTIONS } from '../../src/events/catalog';
import { browserForSuite, screenshots } from '../helpers/browser';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';

type OpenApi = { paths: Record<string, Record<string, { operationId?: string }>>; webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }>; info: { description: string } };

/**
 * The partner reference (CONTRACT §14): /docs renders the OpenAPI document in Chromium with the
 * viewer this service serves itself (no outside network), every path of it; /docs/errors explains
 * every error code, where each error's doc_url points.
 */
describe('the partner reference at /docs', function () {
  ownTemporal();
  this.timeout(120_000);
  const browser = browserForSuite();

  it('renders every path and every webhook of the OpenAPI document, with the signing guide and its worked example, loading nothing from another origin', async () => {
    const base = getStack().baseUrl;
    const spec = (await (await fetch(`${base}/api/partner/v1/openapi.json`)).json()) as OpenApi;
    assert.deepEqual(Object.keys(spec.webhooks).sort(), Object.keys(EVENT_DESCRIPTIONS).sort(), 'every event type is in the webhooks section');
    assert.match(spec.info.description, /X-Service-Signature: v1=36c0b7c3fe53e2cc3a49a64289e6b5dfecfda586c8624114dc3eb59c2af33db5/, "the README's worked example, computed by the code");

    const page = await browser().newPage();
    const elsewhere: string[] = [];
    const failures: string[] = [];
    // Redoc's side menu shows a logo from its CDN: the page's CSP refuses it (the image hides
    // itself on error), so nothing is fetched from another origin.
    const foreign = (url: string) => !url.startsWith(base) && !url.startsWith('blob:') && !url.startsWith('data:');
    page.on('response', (r) => {
      if (foreign(r.url())) elsewhere.push(r.url());
    });
    page.on('requestfailed', (r) => {
      if (foreign(r.url()) && !/^csp$|BLOCKED_BY_CSP/.test(r.failure()?.errorText ?? '')) elsewhere.push(`${r.url()} (${r.failure()?.errorText})`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error') failures.push(m.text());
    });
    const res = await page.goto(`${base}/docs`);
    assert.equal(res?.status(), 200);
    const csp = res!.headers()['content-security-policy'] ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /script-src[^;]*unsafe/, 'no inline or eval script');
    // Redoc renders each operation with its method and path.
    await page.waitForSelector('.api-content', { timeout: 60_000 });
    await page.waitForFunction((n) => document.querySelectorAll('[data-section-id^="operation/"]').length >= n, Object.values(spec.paths).flatMap((p) => Object.keys(p)).length, { timeout: 60_000 });
    const text = await page.evaluate(() => document.body.textContent ?? '');
    for (const path of Object.keys(spec.paths)) assert.ok(text.includes(path), `the page shows ${path}`);
    for (const type of Object.keys(spec.webhooks)) assert.ok(text.includes(type), `the page shows the ${type} webhook`);
    assert.ok(text.includes('Signing requests') && text.includes('A worked example'), 'the signing guide');
    assert.ok(text.includes('Scope: buy'), 'each operation names its scope');
    await screenshots(page, 'docs-reference');
    assert.deepEqual(elsewhere, [], 'nothing from another origin');
    assert.deepEqual(failures.filter((f) => /Content Security Policy|Refused/.test(f) && !f.includes('cdn.redoc.ly/redoc/logo-mini.svg')), [], 'nothing of the viewer refused by the CSP');
    await page.close();
  });

  it('every error code has an entry on /docs/errors, and an error answer’s doc_url leads to it', async () => {
    const base = getStack().baseUrl;
    const { client } = await newPartner();
    const wrong = await client.post<{ error: { code: string; doc_url: string } }>('/api/partner/v1/quotes', { domain: 'not a domain' });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error.doc_url, `${new URL(base).origin}/docs/errors#validation_error`);
    const page = await browser().newPage();
    const res = await page.goto(wrong.body.error.doc_url);
    assert.equal(res?.status(), 200);
    for (const code of Object.keys(ERROR_STATUS)) {
      assert.equal(await page.locator(`dt[id="${code}"]`).count(), 1, code);
    }
    assert.equal(errorGuide().length, Object.keys(ERROR_STATUS).length);
    assert.match((await page.locator('dt[id="validation_error"] + dd').textContent()) ?? '', /details/);
    await screenshots(page, 'docs-errors');
    await page.close();
  });
});
