/**
 * Server-rendered pages for buyers: Eta templates (auto-escaped) from src/pages/views, one
 * layout, no external assets. Shared by checkout now and by the brokerage and referral pages.
 */
import path from 'node:path';
import { Eta } from 'eta';
import type Koa from 'koa';

/** src/pages/views, from both the sources and the compiled dist/src/pages. */
export const VIEWS_DIR = path.resolve(__dirname.includes(`${path.sep}dist${path.sep}`) ? path.join(__dirname, '..', '..', '..', 'src', 'pages') : __dirname, 'views');
export const ASSETS_DIR = path.join(path.dirname(VIEWS_DIR), 'assets');

const eta = new Eta({ views: VIEWS_DIR, autoEscape: true, cache: true, autoTrim: false });

export interface PageData {
  title: string;
  [key: string]: unknown;
}

/** Renders `view` inside the layout as the response, with `status`; pages are never cached. */
export function renderPage(ctx: Koa.Context, view: string, data: PageData, status = 200): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = eta.render(view, data);
}
