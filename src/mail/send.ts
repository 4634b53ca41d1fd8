/**
 * Sending one queued email (the `sendEmail` activity of the `email:<id>` workflow): over SMTP
 * with nodemailer, from its templates, with links signed now. An attempt claims the row with a
 * short lease, so two attempts never send it together, and an email already sent is not sent
 * again whatever is retried. Its Message-ID is the same on every attempt, so the one case left
 * (the process dying between the mail server's answer and marking it sent) reaches the mailbox
 * as a repeat it can recognise.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import type { DataSource } from 'typeorm';
import { Email } from '../db/entities/email';
import { BrokerageCase } from '../db/entities/brokerage-case';
import { progressUrl, type ProgressLinkToken } from '../brokerage/progress-token';
import { onboardingUrl, type OnboardingLinkToken } from '../partners/onboarding-links';
import { renderEmail, type EmailKind, type EmailLinks, type RenderedEmail } from './templates';
import { ROW_LOCK } from '../db/row-lock';

/** An SMTP connection that gives up rather than hang: a slow mail server delays mail, never a step. */
export function smtpTransport(smtpUrl: string): Transporter {
  return nodemailer.createTransport({ url: smtpUrl, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 } as SMTPTransport.Options);
}

export interface MailDeps {
  dataSource: DataSource;
  /** SMTP; undefined when no mail server is configured (emails wait, queued). */
  transport?: Transporter;
  from: string;
  /** Where links point (PUBLIC_BASE_URL, else the local API). */
  publicBaseUrl: string;
  onboardingLinks: OnboardingLinkToken;
  progressToken: ProgressLinkToken;
}

export type SendOutcome = 'sent' | 'already_sent' | 'failed_before';

/** The links an email shows, signed now. */
async function linksFor(deps: MailDeps, email: Email): Promise<EmailLinks> {
  const base = deps.publicBaseUrl.replace(/\/$/, '');
  const links: EmailLinks = { docs: `${base}/docs` };
  const data = email.data as Record<string, string>;
  if (email.kind === 'application_verification') links.verify = onboardingUrl(base, 'verify', deps.onboardingLinks.sign(data.applicationId, 'verify'));
  if (email.kind === 'live_approved') links.liveCredential = onboardingUrl(base, 'live', deps.onboardingLinks.sign(data.applicationId, 'live'));
  if (email.kind === 'brokerage_update') {
    // The link as it is now: one an operator revoked is never sent again.
    const c = await deps.dataSource.getRepository(BrokerageCase).findOneByOrFail({ publicId: data.casePublicId });
    links.progress = progressUrl(base, deps.progressToken.sign(c.publicId, c.linkVersion));
  }
  return links;
}

/** The host of the From address, for Message-IDs. */
function fromDomain(from: string): string {
  return /@([^>\s]+)>?\s*$/.exec(from)?.[1] ?? 'partner-api.invalid';
}

export class MailNotConfigured extends Error {}

/** How long one attempt holds an email: longer than nodemailer's timeouts together (10 + 10 + 20 s). */
export const SENDING_LEASE_SECONDS = 90;

/** Another attempt holds the email (its lease has not run out): this one retries later. */
export class EmailBeingSent extends Error {}

/**
 * Sends the email once; throws (so the activity retries) when the mail server does not take it.
 * The email is claimed in a short transaction (a lease of SENDING_LEASE_SECONDS), sent with no
 * database connection held (a slow mail server holds no connection another step needs), and
 * marked sent in a second one. An attempt that dies mid-way leaves a lease that runs out.
 */
export async function sendQueuedEmail(deps: MailDeps, emailId: string): Promise<SendOutcome> {
  const claim = await deps.dataSource.transaction(async (tx) => {
    const email = await tx.getRepository(Email).createQueryBuilder('e').where('e.id = :emailId', { emailId }).setLock(ROW_LOCK).getOne();
    if (!email) throw new Error(`no email ${emailId}`);
    if (email.status === 'sent') return 'already_sent' as const;
    if (email.status === 'failed') return 'failed_before' as const;
    const held = await tx.getRepository(Email).createQueryBuilder('e').where('e.id = :emailId AND e.sending_until > now()', { emailId }).getExists();
    if (held) throw new EmailBeingSent(`email ${emailId} is being sent by another attempt`);
    await tx.getRepository(Email).update({ id: email.id }, { sendingUntil: () => `now() + interval '${SENDING_LEASE_SECONDS} seconds'` });
    return email;
  });
  if (typeof claim === 'string') return claim;
  const email = claim;
  const messageId = `<${email.id}@${fromDomain(deps.from)}>`;
  try {
    const rendered: RenderedEmail = renderEmail(email.kind as EmailKind, email.data as never, await linksFor(deps, email));
    if (!deps.transport) throw new MailNotConfigured('no mail server is configured (SMTP_URL)');
    await deps.transport.sendMail({ from: deps.from, to: email.recipient, subject: rendered.subject, text: rendered.text, html: rendered.html, messageId, headers: { 'X-Partner-Api-Email': email.kind } });
  } catch (err) {
    await deps.dataSource.getRepository(Email).update({ id: emailId }, { attempts: () => 'attempts + 1', lastError: String((err as Error)?.message ?? err).slice(0, 500), sendingUntil: null });
    throw err;
  }
  await deps.dataSource.getRepository(Email).update({ id: email.id }, { status: 'sent', sentAt: () => 'now()', attempts: () => 'attempts + 1', messageId, lastError: null, sendingUntil: null });
  return 'sent';
}

/** Retries are over (days): the email is marked failed, for the operators (metric, admin). */
export async function markEmailFailed(dataSource: DataSource, emailId: string, error: string): Promise<void> {
  await dataSource.getRepository(Email).update({ id: emailId, status: 'pending' }, { status: 'failed', lastError: error.slice(0, 500) });
}

/** Emails still pending after `olderThanMs` (the sweep starts their workflow again: a start lost with its process). */
export async function pendingEmails(dataSource: DataSource, olderThanMs: number, limit = 200): Promise<string[]> {
  const rows = await dataSource
    .getRepository(Email)
    .createQueryBuilder('e')
    .select('e.id', 'id')
    .where("e.status = 'pending' AND e.created_at < now() - make_interval(secs => :secs)", { secs: olderThanMs / 1000 })
    .orderBy('e.created_at')
    .limit(limit)
    .getRawMany<{ id: string }>();
  return rows.map((r) => r.id);
}

/** Emails pending for more than 15 minutes, and failed ones: the operators' gauge. */
export async function unsentEmails(dataSource: DataSource): Promise<{ pending: number; failed: number }> {
  const repo = dataSource.getRepository(Email);
  const pending = await repo.createQueryBuilder('e').where("e.status = 'pending' AND e.created_at < now() - interval '15 minutes'").getCount();
  const failed = await repo.countBy({ status: 'failed' });
  return { pending, failed };
}
