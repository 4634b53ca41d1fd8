/**
 * The public pages a tracking link leads to (CONTRACT §11), and the link itself.
 *
 * GET /r/<code>: answers 302 to the link's page at once. A person's click (not a known bot by
 * the `isbot` list, not a HEAD, not a prefetch: `Sec-Purpose`/`Purpose: prefetch`) is counted and
 * sets the attribution cookie for 30 days (the last link clicked wins); the click is queued and
 * written after the redirect (ClickRecorder), so the buyer never waits on the write.
 *
 * GET /d/<name> (a domain's page, with "Buy now"), /search (the marketplace's search) and
 * /brokerage (the brokerage product page); `?env=sandbox` shows the sandbox inventory. "Buy now"
 * opens a hosted checkout for the name, sold by the marketplace itself (its house partner).
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import { isbot } from 'isbot';
import { LRUCache } from 'lru-cache';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { buyNowSession, checkoutUrl, type CheckoutDeps } from '../checkout/sessions';
import { Domain } from '../db/entities/domain';
import { Partner } from '../db/entities/partner';
import { ReferralLink } from '../db/entities/referral';
import { newRequestId } from '../api/middleware/request-id';
import type { DomainSearch } from '../discovery/search';
import { ATTRIBUTION_COOKIE, ATTRIBUTION_MS, type AttributionKeys } from '../referral/attribution';
import type { ClickRecorder } from '../referral/clicks';
import { landingPath } from '../referral/links';
import { renderPage } from './render';
import { csrfToken, csrfValid, isPrefetch, pageRouter, readForm } from './security';
import type { Logger } from 'pino';
import { ApiError } from '../api/errors';
import { dependencyUnavailable } from '../api/unavailable';
import { money } from './format';
import type { PageLimits } from './limits';

export const HOUSE_PARTNER = 'marketplace (direct sales)';

export interface ReferralPageDeps {
  dataSource: DataSource;
  checkout: CheckoutDeps;
  search: DomainSearch;
  attribution: AttributionKeys;
  clicks: ClickRecorder;
  publicBaseUrl?: string;
  /** Per client address (the app's, shared with the other pages). */
  limits: PageLimits;
}

function environmentOf(ctx: Koa.Context): Environment {
  return ctx.query.env === 'sandbox' ? 'sandbox' : 'live';
}

/**
 * GET/HEAD /r/<code>, first in the app (before request logging and the routers): the hot path of
 * every tracking link, kept to a cached lookup, a cached bot check, three HMACs and a queued write.
 */
export function linkRedirect(deps: Pick<ReferralPageDeps, 'dataSource' | 'attribution' | 'clicks' | 'limits'> & { logger?: Logger }): Koa.Middleware {
  // Only well-formed codes are looked up and remembered, so the caches' keys stay short. Real links
  // and unknown codes are remembered apart: a flood of made-up codes can never evict a real link.
  const links = new LRUCache<string, ReferralLink>({ max: 10_000, ttl: 60_000 });
  const unknown = new LRUCache<string, true>({ max: 10_000, ttl: 60_000 });
  // The same user agents come back again and again: isbot's verdict is remembered (for ordinary
  // lengths; a longer one is checked each time rather than kept). No user agent at all is no browser.
  const bots = new LRUCache<string, boolean>({ max: 10_000 });
  const isBot = (ua: string) => {
    if (!ua.trim()) return true;
    if (ua.length > 512) return isbot(ua);
    let verdict = bots.get(ua);
    if (verdict === undefined) bots.set(ua, (verdict = isbot(ua)));
    return verdict;
  };
  const notFound = (ctx: Koa.Context) => renderPage(ctx, 'message', { title: 'This link is not valid', text: 'The link may be incomplete. Try the marketplace’s search instead.' }, 404);
  return async (ctx, next) => {
    if (!ctx.path.startsWith('/r/') || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    const code = ctx.path.slice(3);
    (ctx.state as { routeTemplate?: string }).routeTemplate = '/r/{code}';
    // Served before the request context (no access log on this hot path), but with an id as every response has.
    ctx.set('X-Request-Id', newRequestId());
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Frame-Options', 'DENY');
    if (!/^[A-Za-z0-9_-]{6,20}$/.test(code)) return notFound(ctx);
    let link: ReferralLink | false | undefined = links.get(code) ?? (unknown.has(code) ? false : undefined);
    if (link === undefined) {
      // A lookup in the database: bounded per address before it is made (a scan of codes).
      const may = await deps.limits.linkLookup(ctx.ip);
      if (!may.allowed) {
        ctx.set('Retry-After', String(may.retryAfterSeconds));
        return renderPage(ctx, 'message', { title: 'Too many requests', text: `Too many links were asked from your address. Try again in ${may.retryAfterSeconds} seconds.` }, 429);
      }
      try {
        link = (await deps.dataSource.getRepository(ReferralLink).findOneBy({ code })) || false;
      } catch (err) {
        // Postgres down or restarting is expected (the buyer gets a 503 page and retries): a warning; anything else is an error.
        if (dependencyUnavailable(err)) deps.logger?.warn({ err }, 'tracking link lookup failed: the database is unreachable');
        else deps.logger?.error({ err }, 'tracking link lookup failed');
        return renderPage(ctx, 'message', { title: 'This link is not working right now', text: 'Try again in a moment.' }, 503);
      }
      if (link) links.set(code, link);
      else unknown.set(code, true);
    }
    if (!link) return notFound(ctx);
    // Always redirected; counted only within the address's click limit (a flood grows no table).
    const counted = ctx.method === 'GET' && !isPrefetch(ctx) && !isBot(ctx.get('User-Agent')) && (await deps.limits.countClick(ctx.ip));
    if (counted) {
      const now = new Date();
      const previous = deps.attribution.read(ctx.cookies.get(ATTRIBUTION_COOKIE), now.getTime());
      const visitor = previous?.visitor ?? deps.attribution.visitorFor(ctx.ip, ctx.get('User-Agent'));
      deps.clicks.record({ linkId: link.id, partnerId: link.partnerId, environment: link.environment, visitorHash: deps.attribution.visitorHash(visitor), day: now.toISOString().slice(0, 10), clickedAt: now });
      ctx.cookies.set(ATTRIBUTION_COOKIE, deps.attribution.cookie({ visitor, linkCode: link.code, clickedAt: now }), {
        httpOnly: true,
        sameSite: 'lax',
        secure: ctx.secure,
        path: '/',
        maxAge: ATTRIBUTION_MS,
        overwrite: true,
      });
    }
    ctx.status = 302;
    ctx.redirect(landingPath(link));
  };
}

export function referralPages(deps: ReferralPageDeps, logger: Logger): Router {
  const router = pageRouter(logger, { what: 'marketplace page', text: 'We could not show this page. Try again in a moment.', page: { tagline: 'Domains for sale' } });

  router.get('/d/:name', async (ctx) => {
    const environment = environmentOf(ctx);
    const domain = await deps.dataSource.getRepository(Domain).findOneBy({ environment, name: ctx.params.name.toLowerCase() });
    if (!domain || domain.status === 'unlisted') return renderPage(ctx, 'message', { title: `${ctx.params.name} is not for sale here`, text: 'Search the marketplace for a similar name.' }, 404);
    renderPage(ctx, 'domain', {
      tagline: 'Domains for sale',
      sandbox: environment === 'sandbox',
      title: `${domain.name} is for sale`,
      domain: domain.name,
      price: money(domain.buyNowPriceCents, domain.currency),
      available: domain.status === 'listed',
      category: domain.category.replace(/-/g, ' '),
      // An article by the first letter: right for the sandbox's categories; a live inventory's
      // free-text category may read oddly (`An utilities`), never wrongly about the name.
      article: /^[aeiou]/i.test(domain.category) ? 'An' : 'A',
      registeredYear: domain.registeredYear,
      action: `/d/${encodeURIComponent(domain.name)}/buy${environment === 'sandbox' ? '?env=sandbox' : ''}`,
      csrf: csrfToken(ctx),
      searchHref: `/search${environment === 'sandbox' ? '?env=sandbox' : ''}`,
    });
  });

  router.post('/d/:name/buy', async (ctx) => {
    const fields = await readForm(ctx, 4096);
    if (!fields) return renderPage(ctx, 'message', { title: 'This form could not be read', text: 'Reload the page and try again.' }, 400);
    if (!csrfValid(ctx, fields.get('_csrf'))) return renderPage(ctx, 'message', { title: 'This form has expired', text: 'Reload the page and try again.' }, 403);
    const press = await deps.limits.buyNowPress(ctx.ip);
    if (!press.allowed) {
      ctx.set('Retry-After', String(press.retryAfterSeconds));
      return renderPage(ctx, 'message', { title: 'Too many checkouts from here', text: `Too many checkouts were opened from your connection this hour. Try again in ${Math.ceil(press.retryAfterSeconds / 60)} minutes.` }, 429);
    }
    const environment = environmentOf(ctx);
    const house = await deps.dataSource.getRepository(Partner).findOneByOrFail({ name: HOUSE_PARTNER });
    const name = ctx.params.name.toLowerCase();
    try {
      const session = await buyNowSession(deps.checkout, house.id, environment, name);
      ctx.status = 303;
      ctx.redirect(checkoutUrl('', deps.checkout.pageToken.sign(session.publicId, session.expiresAt)));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      renderPage(ctx, 'message', { title: `${ctx.params.name} cannot be bought right now`, text: err.code === 'service_unavailable' ? 'Card payments are not available here yet.' : 'It has been sold or is reserved by another buyer.' }, err.status);
    }
  });

  router.get('/search', async (ctx) => {
    const environment = environmentOf(ctx);
    const q = typeof ctx.query.q === 'string' ? ctx.query.q.trim().slice(0, 200) : '';
    let hits: Awaited<ReturnType<DomainSearch['search']>> = [];
    try {
      if (q) hits = await deps.search.search(environment, q, 5);
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== 'service_unavailable') throw err;
      return renderPage(ctx, 'message', { title: 'Search is unavailable right now', text: 'Please try again in a moment.' }, 503);
    }
    const suffix = environment === 'sandbox' ? '?env=sandbox' : '';
    renderPage(ctx, 'search', {
      tagline: 'Domains for sale',
      title: q ? `Domains for “${q}”` : 'Find a domain',
      sandbox: environment === 'sandbox',
      q,
      env: environment === 'sandbox' ? 'sandbox' : '',
      results: hits.map((h) => ({ name: h.name, href: `/d/${encodeURIComponent(h.name)}${suffix}`, price: money(h.buyNowPriceCents, h.currency), available: h.available })),
    });
  });

  router.get('/brokerage', async (ctx) => {
    renderPage(ctx, 'brokerage-product', { tagline: 'Domain brokerage', title: 'Buy a domain someone else owns', searchHref: `/search${environmentOf(ctx) === 'sandbox' ? '?env=sandbox' : ''}` });
  });

  return router;
}
