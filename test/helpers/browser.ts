/**
 * Debian's Chromium driven by playwright-core, for the buyer-facing pages. Screenshots go to
 * test-artifacts/screenshots/ (kept after the run so a person can look at them).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { getStack, listen } from './stack';
import Koa from 'koa';

export const CHROMIUM = '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
}

/** One Chromium for the describe block that calls this: launched before its tests, closed after. */
export function browserForSuite(): () => Browser {
  let browser: Browser | undefined;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });
  return () => browser!;
}

export function screenshotsDir(): string {
  const dir = path.join(getStack().config.projectRoot, 'test-artifacts', 'screenshots');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Saves the page at a phone's width and a desktop's, as `<name>-phone.png` and `<name>-desktop.png`. */
export async function screenshots(page: Page, name: string): Promise<void> {
  const size = page.viewportSize();
  for (const [label, viewport] of [
    ['phone', { width: 390, height: 844 }],
    ['desktop', { width: 1280, height: 900 }],
  ] as const) {
    await page.setViewportSize(viewport);
    await page.screenshot({ path: path.join(screenshotsDir(), `${name}-${label}.png`), fullPage: true });
  }
  if (size) await page.setViewportSize(size);
}

/** A partner's own site, where success_url and cancel_url lead. */
export async function partnerSite(): Promise<{ url: string; visits: string[] }> {
  const visits: string[] = [];
  const app = new Koa();
  app.use((ctx) => {
    visits.push(ctx.url);
    ctx.type = 'html';
    ctx.body = `<!doctype html><title>Partner site</title><h1>Back at the partner</h1><p>${ctx.path}</p>`;
  });
  return { url: await listen(app), visits };
}
