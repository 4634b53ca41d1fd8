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
import { SignedFields } from '../auth/signed-fields';

export type TokenProblem = 'malformed' | 'bad_signature' | 'expired';

const SHAPE = /^(cs_[0-9a-f]{24})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;
const message = ([sessionId, expiry]: string[]) => `checkout-pt.v1|${sessionId}|${expiry}`;

export class CheckoutPageToken {
  private readonly signer: SignedFields;

  /** The purpose's key, or its keys under every master key version (current first). */
  constructor(key: Buffer | readonly Buffer[]) {
    this.signer = new SignedFields(key);
  }

  sign(sessionId: string, expiresAt: Date): string {
    const fields = [sessionId, String(Math.floor(expiresAt.getTime() / 1000))];
    return this.signer.seal(fields, message(fields));
  }

  /** The session the token names, or why it is refused. `now` is the caller's clock (ms). */
  verify(token: unknown, now: number): { sessionId: string } | { problem: TokenProblem } {
    if (typeof token !== 'string' || !SHAPE.test(token)) return { problem: 'malformed' };
    const fields = this.signer.open(token, SHAPE, message);
    if (!fields) return { problem: 'bad_signature' };
    const [sessionId, expiry] = fields;
    if (Number(expiry) * 1000 <= now) return { problem: 'expired' };
    return { sessionId };
  }
}
