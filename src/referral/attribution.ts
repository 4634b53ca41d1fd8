/**
 * Who a click came from, and which link a browser last clicked (CONTRACT §11).
 *
 * The attribution cookie `ref` holds `<visitor>.<link code>.<clicked at, unix s>.<HMAC>`: set on
 * every counted click for 30 days, so the last link clicked wins. The visitor is the cookie's
 * when the browser sends one; for a browser without it, a keyed hash of its IP address and user
 * agent (HMAC-SHA256, truncated), which then becomes its cookie's visitor: the raw IP is never
 * stored. Clicks are counted under a second keyed hash of the visitor.
 */
import { clientKey } from '../api/client-key';
import { SignedFields } from '../auth/signed-fields';

export const ATTRIBUTION_COOKIE = 'ref';
export const ATTRIBUTION_DAYS = 30;
export const ATTRIBUTION_MS = ATTRIBUTION_DAYS * 24 * 60 * 60 * 1000;

export interface Attribution {
  visitor: string;
  linkCode: string;
  clickedAt: Date;
}

const SHAPE = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{6,20})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;
const message = (fields: string[]) => `cookie|${fields.join('.')}`;

export class AttributionKeys {
  private readonly signer: SignedFields;

  /** The purpose's key, or its keys under every master key version (current first). */
  constructor(key: Buffer | readonly Buffer[]) {
    this.signer = new SignedFields(key);
  }

  private hash(purpose: string, text: string): string {
    return this.signer.digest(`${purpose}|${text}`).subarray(0, 16).toString('base64url');
  }

  /** A visitor id for a browser without a cookie: a keyed hash, never the address itself. */
  visitorFor(ip: string, userAgent: string): string {
    // An IPv6 visitor by its /64, as the page limits count it: a host rotating addresses is one visitor.
    return this.hash('visitor', `${clientKey(ip)}|${userAgent}`);
  }

  /** What clicks are counted under. */
  visitorHash(visitor: string): string {
    return this.hash('count', visitor);
  }

  cookie(a: Attribution): string {
    const fields = [a.visitor, a.linkCode, String(Math.floor(a.clickedAt.getTime() / 1000))];
    return this.signer.seal(fields, message(fields));
  }

  /** The attribution a cookie carries, if it verifies; `now` decides the 30-day window. */
  read(value: string | undefined, now: number): Attribution | undefined {
    const fields = this.signer.open(value, SHAPE, message);
    if (!fields) return undefined;
    const [visitor, linkCode, seconds] = fields;
    const clickedAt = new Date(Number(seconds) * 1000);
    if (now - clickedAt.getTime() > ATTRIBUTION_MS) return undefined;
    return { visitor, linkCode, clickedAt };
  }
}
