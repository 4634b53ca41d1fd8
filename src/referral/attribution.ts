/**
 * Who a click came from, and which link a browser last clicked (CONTRACT §11).
 *
 * The attribution cookie `ref` holds `<visitor>.<link code>.<clicked at, unix s>.<HMAC>`: set on
 * every counted click for 30 days, so the last link clicked wins. The visitor is the cookie's
 * when the browser sends one; for a browser without it, a keyed hash of its IP address and user
 * agent (HMAC-SHA256, truncated), which then becomes its cookie's visitor: the raw IP is never
 * stored. Clicks are counted under a second keyed hash of the visitor.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const ATTRIBUTION_COOKIE = 'ref';
export const ATTRIBUTION_DAYS = 30;
export const ATTRIBUTION_MS = ATTRIBUTION_DAYS * 24 * 60 * 60 * 1000;

export interface Attribution {
  visitor: string;
  linkCode: string;
  clickedAt: Date;
}

export class AttributionKeys {
  constructor(private readonly key: Buffer) {}

  private mac(purpose: string, text: string): Buffer {
    return createHmac('sha256', this.key).update(`${purpose}|${text}`).digest();
  }

  /** A visitor id for a browser without a cookie: a keyed hash, never the address itself. */
  visitorFor(ip: string, userAgent: string): string {
    return this.mac('visitor', `${ip}|${userAgent}`).subarray(0, 16).toString('base64url');
  }

  /** What clicks are counted under. */
  visitorHash(visitor: string): string {
    return this.mac('count', visitor).subarray(0, 16).toString('base64url');
  }

  cookie(a: Attribution): string {
    const body = `${a.visitor}.${a.linkCode}.${Math.floor(a.clickedAt.getTime() / 1000)}`;
    return `${body}.${this.mac('cookie', body).toString('base64url')}`;
  }

  /** The attribution a cookie carries, if it verifies; `now` decides the 30-day window. */
  read(value: string | undefined, now: number): Attribution | undefined {
    if (!value || value.length > 200) return undefined;
    const match = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{6,20})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
    if (!match) return undefined;
    const [, visitor, linkCode, seconds, signature] = match;
    const expected = this.mac('cookie', `${visitor}.${linkCode}.${seconds}`);
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const clickedAt = new Date(Number(seconds) * 1000);
    if (now - clickedAt.getTime() > ATTRIBUTION_MS) return undefined;
    return { visitor, linkCode, clickedAt };
  }
}
