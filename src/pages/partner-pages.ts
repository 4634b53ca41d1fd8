/**
 * Partners' public pages (CONTRACT §16): the application form (`/partners/apply`), the emailed
 * verification link that shows the sandbox credential once (`/partners/verify?t=…`), and the
 * approval's link that shows the live credential once (`/partners/live-credential?t=…`).
 *
 * The form has the pages' limits (per address, and 10 applications an hour), CSRF protection, a
 * field that people do not see and bots fill in, and refuses crawlers of a maintained list; an address
 * that applied 3 times in a day gets no more emails, and the page says the same either way, so it
 * tells nobody whether an address applied. A link is used only by a person's browser: a HEAD, a
 * prefetch or a link scanner of the `isbot` list (less headless browsers) gets a page asking to open it in a browser, and
 * the link keeps working. A credential page is never cached and sends no referrer.
 */
import type { Logger } from 'pino';
import type Koa from 'koa';
import type { DataSource } from 'typeorm';
import { createIsbotFromList, list as botPatterns } from 'isbot';
import { z } from 'zod';
import type { CredentialService } from '../auth/credentials';
import { OnboardingLinkToken, type LinkPurpose } from '../partners/onboarding-links';
import { recordApplication, revealLiveCredential, verifyApplication, type RevealOutcome } from '../partners/onboarding';
import { startOnboarding, tellOnboarding } from '../partners/onboarding-flow';
import { startEmailsOf } from '../mail/start';
import type { WorkflowStarter } from '../temporal/start';
import { publicOrigin } from '../api/public-origin';
import type { PageLimits } from './limits';
import { renderPage } from './render';
import { csrfToken, csrfValid, isPrefetch, pageRouter, readForm } from './security';

const MAX_FORM_BYTES = 16 * 1024;
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const noControl = (pattern: RegExp) => (v: string) => !pattern.test(v);

/** The form's fields, with the message shown beside each when it is wrong. */
const ApplicationFormSchema = z.object({
  // The partner's name operators type (admin partner approve --partner N): printable, no invisible format characters.
  company_name: z.string().trim().min(1, 'Enter your company’s name.').max(180, 'Use at most 180 characters.').refine((v) => !/[\p{Cc}\p{Cf}]/u.test(v), 'Use letters, digits and punctuation only.'),
  contact_email: z.string().trim().min(1, 'Enter an email address we can write to.').max(254, 'Use at most 254 characters.').email('Enter an email address like name@example.com.'),
  website: z
    .string()
    .trim()
    .min(1, 'Enter your website’s address, starting with https://.')
    .max(500, 'Use at most 500 characters.')
    .refine((v) => {
      try {
        const url = new URL(v);
        return url.protocol === 'https:' && !url.username && !url.password && url.hostname.includes('.') && !url.hostname.endsWith('.');
      } catch {
        return false;
      }
    }, 'Enter an https address, like https://example.com.'),
  description: z.string().trim().min(1, 'Tell us what you will build with the API.').max(2000, 'Use at most 2,000 characters.').refine(noControl(CONTROL), 'Use letters, digits and punctuation only.'),
});
type FieldName = keyof z.input<typeof ApplicationFormSchema>;

export interface PartnerPageDeps {
  dataSource: DataSource;
  credentials: CredentialService;
  workflows: WorkflowStarter;
  onboardingLinks: OnboardingLinkToken;
  publicBaseUrl?: string;
}

const LINK_PAGES: Record<'unknown' | 'used' | 'expired', { status: number; title: string; text: string }> = {
  unknown: { status: 404, title: 'This link is not valid', text: 'The link may be incomplete. Copy the whole link from the email, or apply again.' },
  used: { status: 410, title: 'This link was already used', text: 'Each link shows a credential once, and this one has been opened. If you did not keep the secret, write to us and we issue a new credential (the old one is revoked).' },
  expired: { status: 410, title: 'This link has expired', text: 'Verification links work for 24 hours, and the live credential’s link for 7 days. Apply again, or write to us for a new link.' },
};

/**
 * Crawlers and link scanners from isbot's maintained list, less its headless-browser pattern: a
 * partner's engineer may well drive a real browser headless (a test of their onboarding); the
 * form's CSRF token, hidden field and per-address limits stop scripts without one.
 */
const isCrawler = createIsbotFromList(botPatterns.filter((pattern) => !/headless/i.test(pattern)));

/** Not a person opening the link: a HEAD, a prefetch, a link scanner or a crawler. */
function notAPerson(ctx: Koa.Context): boolean {
  if (ctx.method === 'HEAD') return true;
  if (isPrefetch(ctx)) return true;
  const ua = ctx.get('User-Agent');
  return !ua.trim() || isCrawler(ua);
}

export function partnerPages(deps: PartnerPageDeps, logger: Logger, limits: PageLimits): ReturnType<typeof pageRouter> {
  const router = pageRouter(logger, { what: 'partner page', text: 'We could not complete this step. Try again in a moment.', page: { tagline: 'Partners' } });
  const page = { tagline: 'Partners', footer: 'Domain Marketplace partner programme. We never ask for a secret by email.' };

  const showForm = (ctx: Koa.Context, values: Partial<Record<FieldName | 'merchant_of_record', string>> = {}, errors: Partial<Record<FieldName, string>> = {}, status = 200) =>
    renderPage(ctx, 'partner-apply', { ...page, title: 'Apply to become a partner', csrf: csrfToken(ctx), values, errors, errorCount: Object.keys(errors).length }, status);

  router.get('/partners/apply', async (ctx) => showForm(ctx));

  router.post('/partners/apply', async (ctx) => {
    const fields = await readForm(ctx, MAX_FORM_BYTES);
    if (!fields) return renderPage(ctx, 'message', { ...page, title: 'This form could not be read', text: 'Go back and send the form again.' }, 400);
    if (!csrfValid(ctx, fields.get('_csrf'))) return renderPage(ctx, 'message', { ...page, title: 'This form has expired', text: 'For your security the form could not be sent. Reload the page and try again.' }, 403);
    const ua = ctx.get('User-Agent');
    if (!ua.trim() || isCrawler(ua)) return renderPage(ctx, 'message', { ...page, title: 'Applications come from a browser', text: 'Open this page in a web browser to apply.' }, 403);
    const raw = Object.fromEntries([...fields.entries()].filter(([k]) => k in ApplicationFormSchema.shape)) as Record<FieldName, string>;
    const merchant = fields.get('merchant_of_record') === 'yes';
    const keep = { company_name: raw.company_name ?? '', contact_email: raw.contact_email ?? '', website: raw.website ?? '', description: raw.description ?? '', merchant_of_record: merchant ? 'yes' : '' };
    const parsed = ApplicationFormSchema.safeParse(raw);
    if (!parsed.success) {
      const errors: Partial<Record<FieldName, string>> = {};
      for (const issue of parsed.error.issues) {
        const name = issue.path[0] as FieldName;
        errors[name] ??= issue.message;
      }
      return showForm(ctx, keep, errors, 422);
    }
    const verdict = await limits.application(ctx.ip);
    if (!verdict.allowed) {
      ctx.set('Retry-After', String(verdict.retryAfterSeconds));
      return renderPage(ctx, 'message', { ...page, title: 'Too many applications', text: `Too many applications were sent from your address. Try again in ${Math.ceil(verdict.retryAfterSeconds / 60)} minutes.` }, 429);
    }
    // The field people do not see: filled in, it was no person. The same answer, nothing recorded.
    const trap = fields.get('fax');
    const applicationId = trap
      ? undefined
      : await recordApplication(deps.dataSource, {
          companyName: parsed.data.company_name,
          contactEmail: parsed.data.contact_email,
          website: parsed.data.website,
          description: parsed.data.description,
          merchantOfRecord: merchant,
        });
    if (applicationId) {
      // Committed: the email goes whatever happens next (the recovery sweep starts its workflow within a minute).
      try {
        await startEmailsOf(deps.workflows, deps.dataSource, [`application-verification:${applicationId}`]);
        await startOnboarding(deps.workflows, deps.dataSource, applicationId, 'applied', parsed.data.company_name);
      } catch (err) {
        logger.warn({ err, application_id: applicationId }, 'an application was recorded, but its workflows could not be started now');
      }
    }
    renderPage(ctx, 'message', {
      ...page,
      title: 'Check your email',
      text: `We sent a link to ${parsed.data.contact_email}. Open it within 24 hours to confirm your address and see your sandbox credential. Nothing arrived? Look in your spam folder; the link comes from our no-reply address.`,
    });
  });

  /** The application a link names, or its page when it names none. */
  const linked = (ctx: Koa.Context, purpose: LinkPurpose): string | undefined => {
    const id = deps.onboardingLinks.verify(ctx.query.t, purpose);
    if (!id) renderPage(ctx, 'message', { ...page, ...LINK_PAGES.unknown }, LINK_PAGES.unknown.status);
    return id ?? undefined;
  };
  const askForBrowser = (ctx: Koa.Context) =>
    renderPage(ctx, 'message', { ...page, title: 'Open this link in your browser', text: 'This link shows a secret once, so it opens only in a person’s web browser. Copy it into your browser’s address bar.' });
  const tryUrl = (ctx: Koa.Context) => publicOrigin(deps.publicBaseUrl, ctx.headers).replace(/\/$/, '');

  /**
   * A link that shows a credential once: the application it names, then (for a person's browser
   * only) `reveal`, which uses the link up; its page, or the page saying why not.
   */
  const credentialLink = (
    purpose: LinkPurpose,
    reveal: (applicationId: string) => Promise<RevealOutcome>,
    shown: (outcome: Extract<RevealOutcome, { ok: true }>) => { title: string; environment: 'sandbox' | 'live'; next: string },
    after?: (applicationId: string) => Promise<void>,
  ) => async (ctx: Koa.Context) => {
    const applicationId = linked(ctx, purpose);
    if (!applicationId) return;
    if (notAPerson(ctx)) return askForBrowser(ctx);
    const outcome = await reveal(applicationId);
    if (!outcome.ok) return renderPage(ctx, 'message', { ...page, ...LINK_PAGES[outcome.reason] }, LINK_PAGES[outcome.reason].status);
    await after?.(applicationId);
    renderPage(ctx, 'partner-credential', { ...page, ...shown(outcome), partner: outcome.partnerName, keyId: outcome.keyId, secret: outcome.secret, apiUrl: tryUrl(ctx) });
  };

  router.get(
    '/partners/verify',
    credentialLink(
      'verify',
      (id) => verifyApplication(deps.dataSource, deps.credentials, id),
      () => ({
        title: 'Your sandbox credential',
        environment: 'sandbox',
        next: 'Build against the sandbox. When a sandbox order has reached TRANSFER_COMPLETED and your webhook endpoint has answered a delivery, ask for live access: POST /api/partner/v1/live-access with this credential.',
      }),
      async (applicationId) => {
        try {
          await tellOnboarding(deps.workflows, applicationId, 'verified');
          await startEmailsOf(deps.workflows, deps.dataSource, [`sandbox-credentials-ready:${applicationId}`]);
        } catch (err) {
          logger.warn({ err, application_id: applicationId }, 'a partner was verified, but its workflows could not be told now');
        }
      },
    ),
  );

  router.get(
    '/partners/live-credential',
    credentialLink(
      'live',
      (id) => revealLiveCredential(deps.dataSource, deps.credentials, id),
      (outcome) => ({
        title: 'Your live credential',
        environment: 'live',
        next: `Scopes: ${outcome.scopes.join(', ')}. Live requests sell real names for real money: keep this secret on your servers only.`,
      }),
    ),
  );

  return router;
}
