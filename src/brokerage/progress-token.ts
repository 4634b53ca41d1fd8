/**
 * The signed token in a buyer's progress link (CONTRACT §10):
 *
 *   <case_id>.<link version>.<base64url HMAC-SHA256 over "brokerage-progress.v1|<case_id>|<version>">
 *
 * keyed with a key derived from MASTER_KEY for this purpose alone. It has no expiry (the buyer
 * follows the case to its end and may look back afterwards); an operator revokes it by bumping
 * the case's link version, after which the old token verifies but names a version the case no
 * longer has, and the page refuses it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export class ProgressLinkToken {
  constructor(private readonly key: Buffer) {}

  private mac(casePublicId: string, version: number): Buffer {
    return createHmac('sha256', this.key).update(`brokerage-progress.v1|${casePublicId}|${version}`).digest();
  }

  sign(casePublicId: string, version: number): string {
    return `${casePublicId}.${version}.${this.mac(casePublicId, version).toString('base64url')}`;
  }

  /** The case and link version the token names, or null when it is not one this service signed. */
  verify(token: unknown): { casePublicId: string; version: number } | null {
    if (typeof token !== 'string' || token.length > 200) return null;
    const match = /^(brk_[0-9a-f]{24})\.(\d{1,9})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!match) return null;
    const [, casePublicId, versionText, signature] = match;
    const expected = this.mac(casePublicId, Number(versionText));
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    return { casePublicId, version: Number(versionText) };
  }
}

export function progressUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/$/, '')}/brokerage/progress?t=${encodeURIComponent(token)}`;
}
