/**
 * The hosted checkout page (CONTRACT §9), public: GET /checkout?pt=… shows the form, POST
 * /checkout pays. The signed `pt` is checked on every load and every post; a token that does not
 * verify, an expired or a paid session, or a name no longer for sale gets a page saying so (4xx),
 * never the form. The form is protected against CSRF; the buyer's card number and CVC are never
 * stored or echoed back (only the last four digits of an approved card are kept).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type Router from '@koa/router';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { z } from 'zod';
import { cancelHostedAttempt, findSession, payForSession, startHostedPayment, type CheckoutDeps } from '../checkout/sessions';
import { STRIPE_CHECKOUT_ORIGIN } from '../checkout/stripe';
import { publicOrigin } from '../api/public-origin';
import { CardAttemptCheck, CheckoutPayment, type CheckoutSession } from '../db/entities/checkout-session';
import { Order } from '../db/entities/order';
import { Domain } from '../db/entities/domain';
import { ReferralCheckout, ReferralLink } from '../db/entities/referral';
import { ATTRIBUTION_COOKIE, type AttributionKeys } from '../referral/attribution';
import { ASSETS_DIR, renderPage } from './render';
import { allowFormTargets, browserDigest, csrfToken, csrfValid, pageRouter, readForm } from './security';
import { money } from './format';
import type { PageLimits } from './limits';

const ASSETS = new Map([
  ['pages.css', 'text/css; charset=utf-8'],
  ['checkout.js', 'text/javascript; charset=utf-8'],
  ['partners.js', 'text/javascript; charset=utf-8'],
]);
const MAX_FORM_BYTES = 16 * 1024;

/** Control characters (a NUL, an escape) have no place in a name, phone or address; line breaks do in an address. */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const SINGLE_LINE_CONTROL = /[\u0000-\u001f\u007f]/;
const noControl = (pattern: RegExp) => (v: string | undefined) => !v || !pattern.test(v);

/** The form's fields, with the message shown beside each when it is wrong. */
const PaymentForm = z.object({
  name: z.string().trim().min(1, 'Enter your full name.').max(200, 'Use at most 200 characters.').refine(noControl(SINGLE_LINE_CONTROL), 'Use letters, digits and punctuation only.'),
  email: z.string().trim().min(1, 'Enter your email address.').max(254).email('Enter an email address like name@example.com.'),
  card_number: z
    .string()
    .transform((v) => v.replace(/[\s-]/g, ''))
    .pipe(z.string().min(1, 'Enter your card number.').regex(/^\d{12,19}$/, 'Enter the card number as it is printed on the card.')),
  expiry: z
    .string()
    .trim()
    .min(1, 'Enter the expiry date as MM/YY.')
    .regex(/^(0[1-9]|1[0-2])\s*\/\s*(\d{2})$/, 'Enter the expiry date as MM/YY, for example 04/29.')
    .transform((v) => {
      const [month, year] = v.split('/').map((p) => Number(p.trim()));
      return { month, year: 2000 + year };
    })
    .refine(({ month, year }) => {
      const now = new Date();
      return year > now.getUTCFullYear() || (year === now.getUTCFullYear() && month >= now.getUTCMonth() + 1);
    }, 'This card has expired.'),
  cvc: z.string().trim().regex(/^\d{3}$/, 'Enter the 3-digit security code from the back of the card.'),
  organisation: z.string().trim().max(200).optional().refine(noControl(SINGLE_LINE_CONTROL), 'Use letters, digits and punctuation only.'),
  phone: z.string().trim().max(40).optional().refine(noControl(SINGLE_LINE_CONTROL), 'Use digits, spaces and + ( ) - only.'),
  address: z.string().trim().max(400).optional().refine(noControl(CONTROL), 'Use letters, digits and punctuation only.'),
});
type FieldErrors = Partial<Record<keyof z.input<typeof PaymentForm>, string>>;

/** The live page's form: the registrant's details only; the card is taken on the processor's page. */
const HostedForm = PaymentForm.omit({ card_number: true, expiry: true, cvc: true });

function originOf(url: string | null): string[] {
  if (!url) return [];
  try {
    return [new URL(url).origin];
  } catch {
    return [];
  }
}

function withQuery(url: string, params: Record<string, string>): string {
  const target = new URL(url);
  for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v);
  return target.toString();
}

const MESSAGES = {
  invalid: { status: 400, title: 'This checkout link is not valid', text: 'The link may be incomplete or changed. Go back to the site you came from and start the purchase again.' },
  notFound: { status: 404, title: 'This checkout link is not valid', text: 'We could not find this checkout. Go back to the site you came from and start the purchase again.' },
  expired: { status: 410, title: 'This checkout has expired', text: 'Checkout links last 7 days. Go back to the site you came from to start a new purchase. You have not been charged.' },
  csrf: { status: 403, title: 'This form has expired', text: 'For your security the form could not be sent. Reload the page and try again. You have not been charged.' },
  noProcessor: { status: 503, title: 'Card payments are not available', text: 'Card payments are not available here yet. You have not been charged.' },
  tooManyDeclinesHere: { status: 429, title: 'No more cards from here for now', text: 'Too many cards were declined from your connection in the last hour. Try again later, or contact your bank.' },
  tooManyDeclines: { status: 429, title: 'This checkout takes no more cards', text: 'Several cards were declined here. Start a new checkout from the seller\u2019s site, or contact your bank.' },
  busy: { status: 409, title: 'A payment for this checkout is in progress', text: 'Reload this page in a moment to see whether it went through. You have not been charged twice.' },
  confirming: { status: 202, title: 'Your payment is being confirmed', text: 'Your bank has not answered yet. Do not pay again: reload this page in a minute to see the outcome. If the payment does not go through you are not charged, and any amount held on your card is released.' },
} as const;

/** Shown above the form when an earlier attempt of this browser's was given up before the processor answered. */
const ATTEMPT_GIVEN_UP = 'Your previous payment attempt here did not go through in time, so it was not completed: if your bank approves it late, we cancel the charge at once, and you are not charged for it. You can pay again below.';

/** The receipt: "Payment received", the domain, the amount and the order id. */
function receipt(ctx: Koa.Context, session: CheckoutSession, orderPublicId: string, status = 200): void {
  renderPage(ctx, 'receipt', { title: 'Payment received', sandbox: session.environment === 'sandbox', domain: session.domain, price: money(session.priceCents, session.currency), orderId: orderPublicId }, status);
}

export function checkoutPages(deps: CheckoutDeps & { publicBaseUrl?: string }, logger: Logger, limits: PageLimits, attribution?: AttributionKeys): Router {
  /** The link this browser last clicked within 30 days, if its cookie verifies and the link is of this environment. */
  const referredBy = async (ctx: Koa.Context, session: CheckoutSession): Promise<ReferralLink | undefined> => {
    const a = attribution?.read(ctx.cookies.get(ATTRIBUTION_COOKIE), Date.now());
    if (!a) return undefined;
    return (await deps.dataSource.getRepository(ReferralLink).findOneBy({ code: a.linkCode, environment: session.environment })) ?? undefined;
  };
  const router = pageRouter(logger, { what: 'checkout page', text: 'We could not complete this step. You have not been charged twice; try again in a moment.' });

  const message = (ctx: Koa.Context, which: keyof typeof MESSAGES, extra: Record<string, unknown> = {}) => {
    const m = MESSAGES[which];
    renderPage(ctx, 'message', { title: m.title, text: m.text, ...extra }, m.status);
  };

  /**
   * The session the token names, once everything about it allows the form (or, for a payment,
   * a paid one: payForSession tells its buyer's second submit from anyone else's); otherwise the
   * page is answered here. The link may be shared ("Buy now" on a name's page), so the page for
   * a paid session names no order.
   */
  async function openSessionFor(ctx: Koa.Context, pt: unknown, forPayment = false): Promise<CheckoutSession | undefined> {
    const verdict = deps.pageToken.verify(pt, Date.now());
    if ('problem' in verdict) {
      message(ctx, verdict.problem === 'expired' ? 'expired' : 'invalid');
      return undefined;
    }
    const session = await findSession(deps.dataSource, verdict.sessionId);
    if (!session) return void message(ctx, 'notFound');
    if (session.status === 'expired') return void message(ctx, 'expired');
    if (session.status === 'complete' && !forPayment) {
      // The browser that paid sees its receipt again (a reload after "being confirmed"); nobody else does.
      const paid = await deps.dataSource.getRepository(CheckoutPayment).findOneBy({ sessionId: session.id });
      const browser = browserDigest(ctx);
      if (paid?.payerBrowser && browser && paid.payerBrowser === browser && session.orderId) {
        const order = await deps.dataSource.getRepository(Order).findOneByOrFail({ id: session.orderId });
        // Still a 4xx: a used link never answers as if it could be paid (CONTRACT §9).
        receipt(ctx, session, order.publicId, 409);
        return undefined;
      }
      renderPage(ctx, 'message', { title: 'This checkout is already paid', text: `${session.domain} was bought through this checkout, so it cannot be paid again. If you paid, your order number is on the receipt you saw after paying.` }, 409);
      return undefined;
    }
    return session;
  }

  async function showForm(ctx: Koa.Context, session: CheckoutSession, pt: string, status = 200, errors: FieldErrors = {}, values: Record<string, string> = {}, notice?: string) {
    const domain = await deps.dataSource.getRepository(Domain).findOneByOrFail({ id: session.domainId });
    if (domain.status !== 'listed' || domain.buyNowPriceCents !== session.priceCents || domain.currency !== session.currency) {
      renderPage(ctx, 'message', { title: `${session.domain} is no longer available`, text: 'Someone else bought it or it was taken off the market while this page was open. You have not been charged.' }, 409);
      return;
    }
    const hosted = !!deps.hosted?.[session.environment];
    // Paying answers with a redirect to success_url (or, live, to the processor's page), which the form's own page must allow.
    allowFormTargets(ctx, [...originOf(session.successUrl), ...(hosted ? [STRIPE_CHECKOUT_ORIGIN] : [])]);
    renderPage(
      ctx,
      'checkout',
      {
        title: `Buy ${session.domain}`,
        sandbox: session.environment === 'sandbox',
        domain: session.domain,
        price: money(session.priceCents, session.currency),
        pt,
        csrf: csrfToken(ctx),
        cancelUrl: session.cancelUrl,
        errors,
        values: { email: session.customerEmail ?? '', ...values },
        errorCount: Object.keys(errors).length,
        notice,
        hosted,
      },
      status,
    );
  }

  router.get('/checkout', async (ctx) => {
    const session = await openSessionFor(ctx, ctx.query.pt);
    if (!session) return;
    const browser = browserDigest(ctx);
    // This browser's payment is still out with the processor: it is told so, not shown the form.
    if (browser && session.payingSince && session.payingDetails?.browser === browser) return message(ctx, 'confirming');
    // An attempt of this browser's was given up before the processor answered: the form says what became of it.
    const givenUp = browser ? await deps.dataSource.getRepository(CardAttemptCheck).existsBy({ sessionId: session.id, browser }) : false;
    await showForm(ctx, session, String(ctx.query.pt), 200, {}, {}, givenUp ? ATTEMPT_GIVEN_UP : undefined);
    const link = ctx.status === 200 ? await referredBy(ctx, session) : undefined;
    if (link) {
      // A checkout started by a referred browser: the funnel's middle step, once per session.
      await deps.dataSource.getRepository(ReferralCheckout).createQueryBuilder().insert().values({ sessionId: session.id, linkId: link.id, partnerId: link.partnerId, environment: link.environment }).orIgnore().execute();
    }
  });

  router.post('/checkout', async (ctx) => {
    const fields = await readForm(ctx, MAX_FORM_BYTES);
    if (!fields) return message(ctx, 'invalid');
    if (!csrfValid(ctx, fields.get('_csrf'))) return message(ctx, 'csrf');
    const pt = fields.get('pt');
    const session = await openSessionFor(ctx, pt, true);
    if (!session) return;

    if (deps.hosted?.[session.environment]) return payOnProcessorPage(ctx, session, pt!, fields);
    const raw = Object.fromEntries([...fields.entries()].filter(([k]) => k in PaymentForm.shape));
    // What the buyer typed goes back into the form on an error, except the card number and CVC.
    const keep = { name: raw.name ?? '', email: raw.email ?? '', expiry: raw.expiry ?? '', organisation: raw.organisation ?? '', phone: raw.phone ?? '', address: raw.address ?? '' };
    const parsed = PaymentForm.safeParse(raw);
    if (!parsed.success) {
      const errors: FieldErrors = {};
      for (const issue of parsed.error.issues) {
        const field = issue.path[0] as keyof FieldErrors;
        errors[field] ??= issue.code === 'invalid_type' ? 'This field is required.' : issue.message;
      }
      return showForm(ctx, session, pt!, 422, errors, keep);
    }
    const form = parsed.data;
    // Card testing across sessions: each card takes one of the address's hourly declines before
    // the processor is asked (given back unless declined); used up, no card is sent.
    const may = await limits.takeCardAttempt(ctx.ip);
    if (!may.allowed) {
      ctx.set('Retry-After', String(may.retryAfterSeconds));
      return message(ctx, 'tooManyDeclinesHere');
    }
    let keepPoint = false;
    const outcome = await payForSession(
      deps,
      session.publicId,
      { cardNumber: form.card_number, expiryMonth: form.expiry.month, expiryYear: form.expiry.year, cvc: form.cvc },
      {
        browser: browserDigest(ctx)!,
        name: form.name,
        email: form.email,
        registrant: Object.fromEntries(Object.entries({ organisation: form.organisation, phone: form.phone, address: form.address }).filter(([, v]) => v)) as Record<string, string>,
      },
      await referredBy(ctx, session).then((link) => (link ? { linkCode: link.code } : undefined)),
    )
      // Declined, or not yet answered (it may yet be declined): the point stays taken.
      .then((answer) => ((keepPoint = answer.kind === 'declined' || answer.kind === 'pending'), answer))
      .finally(() => (keepPoint ? undefined : limits.notDeclined(ctx.ip).catch(() => undefined)));
    switch (outcome.kind) {
      case 'paid': {
        const orderId = outcome.orderPublicId;
        if (outcome.session.successUrl) {
          allowFormTargets(ctx, originOf(outcome.session.successUrl));
          ctx.status = 303;
          ctx.redirect(withQuery(outcome.session.successUrl, { session_id: outcome.session.publicId, order_id: orderId }));
          return;
        }
        return receipt(ctx, outcome.session, orderId);
      }
      case 'declined':
        return showForm(ctx, session, pt!, 402, { card_number: outcome.reason }, keep);
      case 'expired':
        return message(ctx, 'expired');
      case 'unavailable':
        return renderPage(ctx, 'message', { title: `${session.domain} is no longer available`, text: `${outcome.reason} You have not been charged.` }, 409);
      case 'not_found':
        return message(ctx, 'notFound');
      case 'no_processor':
        return message(ctx, 'noProcessor');
      case 'too_many_declines':
        return message(ctx, 'tooManyDeclines');
      case 'busy':
        return message(ctx, 'busy');
      case 'pending':
        return message(ctx, 'confirming');
      case 'voided':
        return renderPage(
          ctx,
          'message',
          {
            title: `${session.domain} could not be bought`,
            text: `Your bank approved the payment only after this checkout had stopped waiting for it, so the charge ${outcome.confirmed ? 'was cancelled at once' : 'is being cancelled'}. You have not been charged: an amount your bank shows as pending disappears within a few days.`,
          },
          409,
        );
    }
  });

  /** Live: the registrant's details are checked here, then the buyer goes to the processor's page (303). */
  async function payOnProcessorPage(ctx: Koa.Context, session: CheckoutSession, pt: string, fields: URLSearchParams): Promise<void> {
    const raw = Object.fromEntries([...fields.entries()].filter(([k]) => k in HostedForm.shape));
    const keep = { name: raw.name ?? '', email: raw.email ?? '', organisation: raw.organisation ?? '', phone: raw.phone ?? '', address: raw.address ?? '' };
    const parsed = HostedForm.safeParse(raw);
    if (!parsed.success) {
      const errors: FieldErrors = {};
      for (const issue of parsed.error.issues) errors[issue.path[0] as keyof FieldErrors] ??= issue.message;
      return showForm(ctx, session, pt, 422, errors, keep);
    }
    const form = parsed.data;
    // Where Stripe sends the buyer back: PUBLIC_BASE_URL behind a proxy, else this request's host.
    const base = publicOrigin(deps.publicBaseUrl, ctx.headers);
    const outcome = await startHostedPayment(
      deps,
      session.publicId,
      { browser: browserDigest(ctx)!, name: form.name, email: form.email, registrant: Object.fromEntries(Object.entries({ organisation: form.organisation, phone: form.phone, address: form.address }).filter(([, v]) => v)) as Record<string, string> },
      { returnUrl: `${base}/checkout/return?pt=${encodeURIComponent(pt)}`, cancelUrl: `${base}/checkout/cancel?pt=${encodeURIComponent(pt)}` },
      await referredBy(ctx, session).then((link) => (link ? { linkCode: link.code } : undefined)),
    );
    switch (outcome.kind) {
      case 'redirect':
        allowFormTargets(ctx, [STRIPE_CHECKOUT_ORIGIN]);
        ctx.status = 303;
        ctx.redirect(outcome.url);
        return;
      case 'paid':
        return receipt(ctx, session, outcome.orderPublicId);
      case 'expired':
        return message(ctx, 'expired');
      case 'unavailable':
        return renderPage(ctx, 'message', { title: `${session.domain} is no longer available`, text: `${outcome.reason} You have not been charged.` }, 409);
      case 'no_processor':
        return message(ctx, 'noProcessor');
      case 'busy':
        return message(ctx, 'busy');
      default:
        return message(ctx, 'notFound');
    }
  }

  /** Back from the processor's page: the receipt once its event recorded the sale, else a page that looks again every few seconds. */
  router.get('/checkout/return', async (ctx) => {
    const verdict = deps.pageToken.verify(ctx.query.pt, Date.now());
    const browser = browserDigest(ctx);
    const recorded = 'problem' in verdict || !browser ? null : await findSession(deps.dataSource, verdict.sessionId);
    if (recorded?.status === 'complete' && recorded.orderId) {
      const paid = await deps.dataSource.getRepository(CheckoutPayment).findOneBy({ sessionId: recorded.id });
      if (paid?.payerBrowser === browser) {
        const order = await deps.dataSource.getRepository(Order).findOneByOrFail({ id: recorded.orderId });
        if (recorded.successUrl) {
          ctx.status = 303;
          ctx.redirect(withQuery(recorded.successUrl, { session_id: recorded.publicId, order_id: order.publicId }));
          return;
        }
        return receipt(ctx, recorded, order.publicId);
      }
    }
    const session = await openSessionFor(ctx, ctx.query.pt);
    if (!session) return;
    renderPage(ctx, 'message', { title: 'Confirming your payment…', text: 'Your payment is being confirmed with your bank. This page looks again every few seconds; there is no need to pay again.', refreshSeconds: 3 }, 202);
  });

  /** "Cancel" on the processor's page: this browser's attempt is given back and the form shown again. */
  router.get('/checkout/cancel', async (ctx) => {
    const verdict = deps.pageToken.verify(ctx.query.pt, Date.now());
    const browser = browserDigest(ctx);
    if (!('problem' in verdict) && browser) await cancelHostedAttempt(deps.dataSource, verdict.sessionId, browser);
    const session = await openSessionFor(ctx, ctx.query.pt);
    if (!session) return;
    await showForm(ctx, session, String(ctx.query.pt));
  });

  router.get('/checkout/assets/:file', async (ctx) => {
    // A Map, not an object: `constructor` or `__proto__` is no asset.
    const type = ASSETS.get(ctx.params.file);
    if (!type) return renderPage(ctx, 'message', { title: 'Not found', text: 'There is nothing here.' }, 404);
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = await readFile(path.join(ASSETS_DIR, ctx.params.file));
  });

  return router;
}
