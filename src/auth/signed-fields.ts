/**
 * The one way the service signs what it hands to browsers (checkout `pt`, brokerage progress
 * links, the referral attribution cookie): dot-joined fields followed by a base64url
 * HMAC-SHA256 over a message built from them, under a key derived for that purpose alone, and
 * checked in constant time. Given the purpose's keys under every master key version (current
 * first), it signs with the current one and accepts any (src/auth/secret-box.ts).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export class SignedFields {
  private readonly keys: readonly Buffer[];

  constructor(key: Buffer | readonly Buffer[]) {
    this.keys = Buffer.isBuffer(key) ? [key] : key;
    if (!this.keys.length) throw new Error('SignedFields needs a key');
  }

  private mac(message: string, key = this.keys[0]): Buffer {
    return createHmac('sha256', key).update(message).digest();
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
    const signed = message(fields);
    for (const key of this.keys) {
      const expected = Buffer.from(this.mac(signed, key).toString('base64url'), 'latin1');
      if (given.length === expected.length && timingSafeEqual(given, expected)) return fields;
    }
    return undefined;
  }

  /** A keyed hash for a purpose (not a token): HMAC-SHA256 of the message under the current key. */
  digest(message: string): Buffer {
    return this.mac(message);
  }
}
