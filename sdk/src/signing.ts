/**
 * Request signing, CONTRACT §1. The one implementation used by the API (to verify), the partner
 * client and CLI (to sign) and the tests.
 */
import { createHash, createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';

export const SIGNATURE_VERSION = 'v1';
export const HEADER = {
  keyId: 'x-service-key-id',
  timestamp: 'x-service-timestamp',
  nonce: 'x-service-nonce',
  signature: 'x-service-signature',
} as const;

/** RFC 3986 percent-encoding: only A-Z a-z 0-9 - _ . ~ stay as they are; hex digits upper case. */
export function encodeRfc3986(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Every parameter, encoded, sorted by encoded name then encoded value, joined with `&`. */
export function canonicalQuery(params: Iterable<[string, string]>): string {
  const pairs = [...params].map(([name, value]) => [encodeRfc3986(name), encodeRfc3986(value)] as const);
  pairs.sort(([an, av], [bn, bv]) => (an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return pairs.map(([name, value]) => `${name}=${value}`).join('&');
}

/**
 * The decoded parameters of a raw query string (what follows `?`), parsed the way browsers and
 * URLSearchParams build them: `+` is a space, so a literal plus travels as `%2B`.
 */
export function queryPairs(rawQuery: string): Array<[string, string]> {
  return [...new URLSearchParams(rawQuery).entries()];
}

const EMPTY_SHA256 = createHash('sha256').digest('hex');

export function sha256Hex(body: Buffer | string): string {
  return body.length === 0 ? EMPTY_SHA256 : createHash('sha256').update(body).digest('hex');
}

export interface SignedParts {
  keyId: string;
  timestamp: string;
  nonce: string;
  method: string;
  path: string;
  query: Iterable<[string, string]>;
  body: Buffer | string;
}

export function canonicalString(parts: SignedParts): string {
  return [
    SIGNATURE_VERSION,
    parts.keyId,
    parts.timestamp,
    parts.nonce,
    parts.method.toUpperCase(),
    parts.path,
    canonicalQuery(parts.query),
    sha256Hex(parts.body),
  ].join('\n');
}

/** `secret`: the credential's secret, or a KeyObject made from its UTF-8 bytes once (cheaper per request). */
function signatureBytes(secret: string | KeyObject, parts: SignedParts): Buffer {
  return createHmac('sha256', secret).update(canonicalString(parts)).digest();
}

/** Lower-case hex HMAC-SHA256 of the canonical string, without the `v1=` prefix. */
export function computeSignature(secret: string, parts: SignedParts): string {
  return signatureBytes(secret, parts).toString('hex');
}

export function signatureHeader(secret: string, parts: SignedParts): string {
  return `${SIGNATURE_VERSION}=${computeSignature(secret, parts)}`;
}

/** Constant-time check of an `X-Service-Signature` header value. */
export function signatureMatches(secret: string | KeyObject, parts: SignedParts, header: string): boolean {
  const match = /^v1=([0-9a-f]{64})$/.exec(header.trim());
  if (!match) return false;
  const expected = signatureBytes(secret, parts);
  const given = Buffer.from(match[1], 'hex');
  return expected.length === given.length && timingSafeEqual(expected, given);
}
