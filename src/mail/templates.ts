/**
 * What each email says (CONTRACT §16): Eta templates in src/mail/views, a plain-text part
 * (`<kind>.txt.eta`) and an HTML part (`<kind>.html.eta`, auto-escaped, inside one layout with
 * inline styles only: mail clients load nothing else). No template is given a secret: a link
 * that reveals one is signed when the email is sent and works once. The verification email, the
 * one anybody can have sent to any address, repeats nothing the applicant typed (no company
 * name), so the form cannot be used to put someone's words in our mail.
 */
import path from 'node:path';
import { Eta } from 'eta';
import { money } from '../pages/format';

export interface EmailData {
  application_verification: { applicationId: string; companyName: string };
  sandbox_credentials_ready: { companyName: string; keyId: string };
  live_approved: { applicationId: string; companyName: string; scopes: string[] };
  live_rejected: { companyName: string; reason: string };
  checkout_receipt: { domain: string; priceCents: number; currency: string; orderId: string; sandbox: boolean };
  brokerage_update: { casePublicId: string; domain: string; status: string; seq: number; sandbox: boolean };
  webhook_endpoint_failing: { environment: string; url: string; since: string; lastError: string };
  webhook_endpoint_disabled: { environment: string; url: string; lastError: string };
}
export type EmailKind = keyof EmailData;
export const EMAIL_KINDS = [
  'application_verification',
  'sandbox_credentials_ready',
  'live_approved',
  'live_rejected',
  'checkout_receipt',
  'brokerage_update',
  'webhook_endpoint_failing',
  'webhook_endpoint_disabled',
] as const satisfies readonly EmailKind[];

/** Links made when the email is sent (signed then; the email row never holds them). */
export interface EmailLinks {
  /** The application's single-use verification link (24 h). */
  verify?: string;
  /** The approval's single-use link that shows the live credential once. */
  liveCredential?: string;
  /** The brokerage buyer's progress page. */
  progress?: string;
  /** The API reference. */
  docs: string;
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

const VIEWS = path.resolve(__dirname.includes(`${path.sep}dist${path.sep}`) ? path.join(__dirname, '..', '..', '..', 'src', 'mail') : __dirname, 'views');
const html = new Eta({ views: VIEWS, autoEscape: true, cache: true, autoTrim: false });
const text = new Eta({ views: VIEWS, autoEscape: false, cache: true, autoTrim: false });

/** Brokerage statuses as a buyer reads them. */
const CASE_STATUS_TEXT: Record<string, string> = {
  requested: 'Your request was received',
  researching: 'We are researching the name and its owner',
  owner_contacted: 'We have contacted the owner',
  negotiating: 'We are negotiating with the owner',
  agreed: 'A price was agreed',
  payment_secured: 'Your payment is secured',
  transferring: 'The name is being transferred',
  completed: 'The purchase is complete',
  closed: 'The case was closed',
};

function subjectOf<K extends EmailKind>(kind: K, data: EmailData[K]): string {
  const d = data as EmailData[EmailKind] & Record<string, unknown>;
  switch (kind) {
    case 'application_verification':
      return 'Confirm your email to get your sandbox credential';
    case 'sandbox_credentials_ready':
      return 'Your sandbox credential is ready';
    case 'live_approved':
      return 'Live access approved: your live credential is waiting';
    case 'live_rejected':
      return 'Your request for live access';
    case 'checkout_receipt':
      return `Receipt: ${d.domain as string}`;
    case 'brokerage_update':
      return `${d.domain as string}: ${CASE_STATUS_TEXT[d.status as string] ?? (d.status as string)}`;
    case 'webhook_endpoint_failing':
      return `Your ${d.environment as string} webhook endpoint has failed for 24 hours`;
    case 'webhook_endpoint_disabled':
      return `Your ${d.environment as string} webhook endpoint was disabled`;
    default:
      throw new Error(`no email of kind ${String(kind)}`);
  }
}

export function renderEmail<K extends EmailKind>(kind: K, data: EmailData[K], links: EmailLinks): RenderedEmail {
  if (!(EMAIL_KINDS as readonly string[]).includes(kind)) throw new Error(`no email of kind ${String(kind)}`);
  const d = data as Record<string, unknown>;
  const it = {
    ...d,
    links,
    price: typeof d.priceCents === 'number' ? money(d.priceCents, d.currency as string) : undefined,
    statusText: typeof d.status === 'string' ? (CASE_STATUS_TEXT[d.status] ?? d.status) : undefined,
  };
  const subject = subjectOf(kind, data);
  return {
    subject,
    text: text.render(`./${kind}.txt.eta`, it).trim() + '\n\n-- \nDomain Marketplace\n',
    html: html.render('./layout.html.eta', { subject, body: html.render(`./${kind}.html.eta`, it) }),
  };
}
