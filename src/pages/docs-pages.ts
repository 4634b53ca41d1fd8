/**
 * The partner reference (CONTRACT §14), public and unauthenticated:
 * - `GET /docs`: the OpenAPI document rendered by Redoc's standalone bundle, served from here
 *   (the build copies it from the redoc package: src/pages/docs-assets.ts), no outside network;
 * - `GET /docs/errors`: every error code, its status, what it means and what to do; each error's
 *   `doc_url` points at its entry here.
 * Both are pages with the pages' security headers and limits.
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { errorGuide } from '../api/error-guide';
import { renderPage } from './render';
import { allowReferenceViewer, pageRouter } from './security';
import { REDOC_BUNDLE } from './docs-assets';

/** `specUrl`: where the API serves its OpenAPI document. */
export function docsPages(logger: Logger, specUrl: string) {
  const router = pageRouter(logger, { what: 'reference page', text: 'The reference could not be shown; try again shortly.', page: { tagline: 'Partner API reference' } });

  router.get('/docs', (ctx) => {
    allowReferenceViewer(ctx);
    renderPage(ctx, 'docs', { title: 'Partner API reference', specUrl });
  });

  router.get('/docs/errors', (ctx) => {
    renderPage(ctx, 'docs-errors', {
      title: 'Errors: Partner API reference',
      tagline: 'Partner API reference',
      footer: 'Every error answer has the same shape: { "error": { "code", "message", "request_id", "doc_url" } }.',
      errors: errorGuide(),
    });
  });

  let bundle: Promise<Buffer> | undefined;
  router.get('/docs/assets/redoc.standalone.js', async (ctx) => {
    bundle ??= readFile(REDOC_BUNDLE);
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = await bundle.catch((err: unknown) => {
      bundle = undefined;
      throw err;
    });
  });

  return router;
}
