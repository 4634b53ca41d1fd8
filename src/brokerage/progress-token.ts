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
import { SignedFields } from '../auth/signed-fields';

const SHAPE = /^(brk_[0-9a-f]{24})\.(\d{1,9})\.([A-Za-z0-9_-]{43})$/;
const message = ([casePublicId, version]: string[]) => `brokerage-progress.v1|${casePublicId}|${version}`;

export class ProgressLinkToken {
  private readonly signer: SignedFields;

  /** The purpose's key, or its keys under every master key version (current first). */
  constructor(key: Buffer | readonly Buffer[]) {
    this.signer = new SignedFields(key);
  }

  sign(casePublicId: string, version: number): string {
    const fields = [casePublicId, String(version)];
    return this.signer.seal(fields, message(fields));
  }

  /** The case and link version the token names, or null when it is not one this service signed. */
  verify(token: unknown): { casePublicId: string; version: number } | null {
    const fields = this.signer.open(token, SHAPE, message);
    return fields ? { casePublicId: fields[0], version: Number(fields[1]) } : null;
  }
}

export function progressUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/$/, '')}/brokerage/progress?t=${encodeURIComponent(token)}`;
}
