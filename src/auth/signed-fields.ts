/**
 * The one way the service signs what it hands to browsers (checkout `pt`, brokerage progress
 * links, the referral attribution cookie): dot-joined fields followed by a base64url
 * HMAC-SHA256 over a message built from them, under a key derived for that purpose alone, and
 * checked in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export class SignedFields {
  constructor(private readonly key: Buffer) {}

  private mac(message: string): Buffer {
    return createHmac('sha256', this.key).update(message).digest();
  }

  /** `<field>.<field>….<signature>`, the signature over `message`. */
  seal(fields: string[], message: string): string {
    return `${fields.join('.')}.${this.mac(message).toString('base64url')}`;
  }

  /**
   * The fields of `token` when it has `shape` (a pattern capturing each field and, last, the
   * signature) and its signature matches `message(fields)`; undefined otherwise.
   */
  open(token: unknown, shape: RegExp, message: (fields: string[]) => string): string[] | undefined {
    if (typeof token !== 'string' || token.length > 200) return undefined;
    const match = shape.exec(token);
    if (!match) return undefined;
    const fields = match.slice(1, -1);
    // The signature is compared as it is written, not decoded: a decoder ignores the last
    // character's spare bits, so a decoded compare would take 4 spellings of one signature.
    const given = Buffer.from(match[match.length - 1], 'latin1');
    const expected = Buffer.from(this.mac(message(fields)).toString('base64url'), 'latin1');
    return given.length === expected.length && timingSafeEqual(given, expected) ? fields : undefined;
  }

  /** A keyed hash for a purpose (not a token): HMAC-SHA256 of the message. */
  digest(message: string): Buffer {
    return this.mac(message);
  }
}
