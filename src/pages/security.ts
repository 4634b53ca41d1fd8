/**
 * The security of every buyer-facing page, in one place: strict headers from helmet (a CSP that
 * allows only this origin's own stylesheet and script, no framing, no referrer so a signed link
 * never leaks to the next site) and CSRF protection of forms (the csrf package: a secret in an
 * HttpOnly, SameSite=Strict cookie, a token made from it in the form).
 */
import { createHash } from 'node:crypto';
import Tokens from 'csrf';
import getRawBody from 'raw-body';
import type Koa from 'koa';
import helmet from 'koa-helmet';
import Router from '@koa/router';
import type { Logger } from 'pino';
import { urlMayHoldNul } from '../api/middleware/validate';
import { renderPage } from './render';
import { dependencyUnavailable } from '../api/unavailable';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../api/middleware/errors';

const tokens = new Tokens();
const CSRF_COOKIE = 'csrf';

/** Form targets a page may post to (its own origin always); set by a handler before the headers go out. */
const formTargets = new WeakMap<object, string[]>();

export function allowFormTargets(ctx: Koa.Context, origins: string[]): void {
  formTargets.set(ctx.res, origins);
}

/**
 * Pages that run the API reference's viewer (/docs): it injects its styles (styled-components)
 * and runs its search in a worker made from a blob. Only those pages allow either; they hold no
 * form, no buyer data and no token.
 */
const viewerPages = new WeakSet<object>();

export function allowReferenceViewer(ctx: Koa.Context): void {
  viewerPages.add(ctx.res);
}

const headers = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      'default-src': ["'none'"],
      'script-src': ["'self'"],
      'style-src': ["'self'", (_req, res) => (viewerPages.has(res) ? "'unsafe-inline'" : '')],
      'worker-src': ["'self'", (_req, res) => (viewerPages.has(res) ? 'blob:' : '')],
      'img-src': ["'self'", 'data:'],
      'connect-src': ["'self'"],
      // After paying, the form's answer redirects to the partner's success_url: that origin too.
      'form-action': ["'self'", (_req, res) => (formTargets.get(res) ?? []).join(' ')],
      'frame-ancestors': ["'none'"],
      'base-uri': ["'none'"],
    },
  },
  referrerPolicy: { policy: 'no-referrer' },
  crossOriginOpenerPolicy: { policy: 'same-origin' },
  crossOriginResourcePolicy: { policy: 'same-origin' },
  strictTransportSecurity: { maxAge: 31536000, includeSubDomains: true },
  xFrameOptions: { action: 'deny' },
});

/** Runs the page, then sets its security headers (so they can depend on what the page decided). */
export function pageSecurity(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    await headers(ctx, async () => undefined);
    ctx.set('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=(self)');
  };
}

/** A CSRF token for the form, creating the browser's secret cookie when it has none. */
export function csrfToken(ctx: Koa.Context): string {
  let secret = ctx.cookies.get(CSRF_COOKIE);
  if (!secret || secret.length > 100) {
    secret = tokens.secretSync();
    ctx.cookies.set(CSRF_COOKIE, secret, { httpOnly: true, sameSite: 'strict', secure: ctx.secure, path: '/', overwrite: true });
  }
  return tokens.create(secret);
}

/**
 * This browser session's identity for the checkout: a digest of its CSRF secret (an HttpOnly,
 * SameSite=Strict cookie no page script or other site can read). Undefined before its first form.
 */
export function browserDigest(ctx: Koa.Context): string | undefined {
  const secret = ctx.cookies.get(CSRF_COOKIE);
  return secret ? createHash('sha256').update(`checkout-browser:${secret}`).digest('hex') : undefined;
}

/** A posted form's fields (URL-encoded, at most `limitBytes`); undefined when the body cannot be read. */
export async function readForm(ctx: Koa.Context, limitBytes: number): Promise<URLSearchParams | undefined> {
  try {
    return new URLSearchParams((await getRawBody(ctx.req, { length: ctx.get('content-length') || undefined, limit: limitBytes, encoding: 'utf8' })) as string);
  } catch {
    return undefined;
  }
}

/** A browser's prefetch or prerender of a link (not a person opening it): it must not count or use anything up. */
export function isPrefetch(ctx: Koa.Context): boolean {
  return /prefetch/i.test(ctx.get('Sec-Purpose')) || /prefetch/i.test(ctx.get('Purpose')) || /prefetch/i.test(ctx.get('X-Moz'));
}

export function csrfValid(ctx: Koa.Context, token: unknown): boolean {
  const secret = ctx.cookies.get(CSRF_COOKIE);
  return typeof token === 'string' && !!secret && tokens.verify(secret, token);
}

/**
 * A router for buyer-facing pages: their security headers, and a page (never JSON, never a
 * stack) when something fails unexpectedly, logged with the request id.
 */
export function pageRouter(logger: Logger, failure: { what: string; text: string; page?: Record<string, string> }): Router {
  const router = new Router();
  router.use(pageSecurity());
  router.use(async (ctx, next) => {
    // A NUL character fits no name, token or text this site stores (Postgres refuses it); a
    // malformed escape elsewhere in the URL does not hide one (the raw URL is read).
    if (urlMayHoldNul(ctx.url)) return renderPage(ctx, 'message', { ...failure.page, title: 'This page does not exist', text: 'Check the address.' }, 404);
    try {
      await next();
    } catch (err) {
      if (dependencyUnavailable(err)) {
        // A part restarting (Postgres, Redis, Temporal): a page that says to try again shortly, never a 500.
        logger.warn({ err, request_id: ctx.state.requestId }, `${failure.what}: a part underneath is unavailable`);
        ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
        return renderPage(ctx, 'message', { ...failure.page, title: 'Back in a moment', text: 'This page is briefly unavailable: try again in a few seconds. A card is never charged twice for one checkout.', requestId: ctx.state.requestId }, 503);
      }
      logger.error({ err, request_id: ctx.state.requestId }, `${failure.what} failed`);
      renderPage(ctx, 'message', { ...failure.page, title: 'Something went wrong', text: failure.text, requestId: ctx.state.requestId }, 500);
    }
  });
  return router;
}
