/**
 * The buyer's brokerage progress page (CONTRACT §10), public: GET /brokerage/progress?t=… with the
 * signed link token. It shows the status in words, the timeline with times and what happens
 * next, and nothing of the partner's money (no fee, no share, no budget). A token that does not
 * verify, or a link an operator revoked, gets a page saying so (4xx) and no case. Same layout,
 * security headers and assets as checkout; the page has no form, so no CSRF token.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { findCase, timelines, type BrokerageDeps } from '../brokerage/cases';
import type { BrokerageCase } from '../db/entities/brokerage-case';
import type { CaseStatus, CaseTier } from '../../workflows/brokerage-messages';
import { renderPage } from './render';
import { pageRouter } from './security';
import { money } from './format';

/** Each status in words, as the buyer reads it. */
export const STATUS_TEXT: Record<CaseStatus, string> = {
  requested: 'Request received',
  researching: 'Researching the owner',
  owner_contacted: 'Owner contacted',
  negotiating: 'Negotiating',
  agreed: 'Price agreed',
  payment_secured: 'Payment secured',
  transferring: 'Transferring',
  completed: 'Completed',
  closed: 'Closed',
};

const TIER_TEXT: Record<CaseTier, string> = {
  managed: 'Managed: our brokers find the owner, contact them and negotiate for you',
  self_serve: 'Self-serve: you negotiate with the owner; we secure the payment and the transfer',
};

/** "What happens next", by status (and tier where who acts differs). */
function nextStep(c: BrokerageCase): string {
  const managed = c.tier === 'managed';
  switch (c.status) {
    case 'requested':
      return managed ? 'Our brokers will start researching who owns the name.' : 'We will identify the owner of the name so that you can negotiate with them.';
    case 'researching':
      return managed ? 'We are finding the current owner and how to reach them. Next, we contact them for you.' : 'We are identifying the current owner. Next, the owner is contacted.';
    case 'owner_contacted':
      return managed
        ? 'We have contacted the owner and are waiting for a reply. If they do not answer, we follow up after 3, 7 and 14 days.'
        : 'The owner has been contacted. If they do not answer, you will be reminded to follow up after 3, 7 and 14 days.';
    case 'negotiating':
      return managed ? 'We are negotiating a price with the owner within your budget.' : 'You are negotiating a price with the owner. Let us know when you agree on one.';
    case 'agreed':
      return 'A price has been agreed. Next, your payment is secured in escrow; if it is not secured within 10 days, the negotiation reopens.';
    case 'payment_secured':
      return 'Your payment is held in escrow. Next, the owner starts the transfer of the name to you.';
    case 'transferring':
      return 'The name is being transferred to you. The owner is paid only once you hold the name.';
    case 'completed':
      return 'The name is yours: the transfer is complete and the owner has been paid. Nothing more to do.';
    case 'closed':
      return 'This case ended without a purchase. Any payment held in escrow is returned to you. You can ask for a new case at any time.';
  }
}

function when(at: string): string {
  return `${new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(new Date(at))} UTC`;
}

const PAGE = { tagline: 'Domain acquisition', footer: 'Questions about this case? Contact the site where you asked for it.' };

const MESSAGES = {
  invalid: { status: 404, title: 'This progress link is not valid', text: 'The link may be incomplete or changed. Use the link exactly as you received it, or ask the site where you requested the acquisition for a new one.' },
  revoked: { status: 410, title: 'This progress link has been withdrawn', text: 'For your security this link no longer works. Ask the site where you requested the acquisition for a new link.' },
} as const;

export function brokeragePages(deps: BrokerageDeps, logger: Logger): Router {
  const router = pageRouter(logger, { what: 'brokerage page', text: 'We could not show this page. Try again in a moment.', page: PAGE });

  const message = (ctx: Koa.Context, which: keyof typeof MESSAGES) => renderPage(ctx, 'message', { ...PAGE, title: MESSAGES[which].title, text: MESSAGES[which].text }, MESSAGES[which].status);

  router.get('/brokerage/progress', async (ctx) => {
    const link = deps.progressToken.verify(ctx.query.t);
    if (!link) return message(ctx, 'invalid');
    const c = await findCase(deps.dataSource.manager, link.casePublicId);
    if (!c) return message(ctx, 'invalid');
    if (link.version !== c.linkVersion) return message(ctx, 'revoked');
    const timeline = (await timelines(deps.dataSource.manager, [c.id])).get(c.id)!;
    renderPage(ctx, 'brokerage-progress', {
      ...PAGE,
      title: `${c.domain}: ${STATUS_TEXT[c.status]}`,
      domain: c.domain,
      caseId: c.publicId,
      statusText: STATUS_TEXT[c.status],
      tierText: TIER_TEXT[c.tier],
      price: c.priceCents ? money(c.priceCents, c.currency) : null,
      next: nextStep(c),
      // Only a closing entry says why (the buyer should know why the case ended); operators' other notes stay internal.
      timeline: timeline.map((e) => ({ text: STATUS_TEXT[e.status], at: e.at, when: when(e.at), detail: e.status === 'closed' ? e.detail : undefined })),
    });
  });

  return router;
}
