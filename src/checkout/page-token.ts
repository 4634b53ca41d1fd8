/**
 * `pt`, the signed token in a checkout link (CONTRACT §9). It is
 *
 *   <session_id>.<expiry, Unix seconds>.<base64url HMAC-SHA256 over "checkout-pt.v1|<session_id>|<expiry>">
 *
 * keyed with a key derived from MASTER_KEY for this purpose alone (so every API process accepts
 * it and nothing else signed with the master key can pass for it). The page checks it on every
 * load and every form post, and then the session it names: a token that does not verify, or a
 * session that has expired or been paid, gets a page saying so (4xx), never the form.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type TokenProblem = 'malformed' | 'bad_signature' | 'expired';

export class CheckoutPageToken {
  constructor(private readonly key: Buffer) {}

  private mac(sessionId: string, expiry: number): Buffer {
    return createHmac('sha256', this.key).update(`checkout-pt.v1|${sessionId}|${expiry}`).digest();
  }

  sign(sessionId: string, expiresAt: Date): string {
    const expiry = Math.floor(expiresAt.getTime() / 1000);
    return `${sessionId}.${expiry}.${this.mac(sessionId, expiry).toString('base64url')}`;
  }

  /** The session the token names, or why it is refused. `now` is the caller's clock (ms). */
  verify(token: unknown, now: number): { sessionId: string } | { problem: TokenProblem } {
    if (typeof token !== 'string' || token.length > 200) return { problem: 'malformed' };
    const match = /^(cs_[0-9a-f]{24})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!match) return { problem: 'malformed' };
    const [, sessionId, expiryText, signature] = match;
    const expected = this.mac(sessionId, Number(expiryText));
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { problem: 'bad_signature' };
    if (Number(expiryText) * 1000 <= now) return { problem: 'expired' };
    return { sessionId };
  }
}
