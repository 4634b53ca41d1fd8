/**
 * CONTRACT §1 in order: missing key id (401 missing_credentials; requireKeyId, before the body is
 * read); unknown or revoked key, bad
 * timestamp or skew, bad nonce, wrong signature (401 invalid_signature); then, in Postgres
 * (or Redis; batched per event-loop turn, see Admission), nonce replay or a timestamp older than the
 * replay store's last crash recovery (401), scope (403) and the rate limit (429). Only an
 * admitted request records its nonce and takes a token, so neither a forged, a forbidden nor a
 * rate-limited request burns a partner's nonces or budget.
 */
import type { Middleware } from 'koa';
import type { Config, Environment } from '../../config';
import { environmentOfKeyId, type CredentialService, type ResolvedCredential } from '../../auth/credentials';
import { HEADER, queryPairs, signatureMatches } from '../../auth/signing';
import type { Scope } from '../../auth/scopes';
import { AdmissionUnavailable, type Admission, type AdmissionResult } from '../../auth/admission';
import { UUID_V4 } from '../../ids';
import { ApiError } from '../errors';
import { queryObject } from './validate';
import type { AdmittedRead } from '../route';
import type { AppState } from '../state';
import { admissionOutcomes } from '../../metrics/metrics';

export const MAX_SKEW_SECONDS = 300;

export interface AuthDeps {
  credentials: CredentialService;
  /** Decides admission (Postgres or Redis), batched per event-loop turn. */
  admission: Admission;
  config: Pick<Config, 'rateLimits'>;
  /** Server time in ms; replaceable so tests can pin the clock. */
  now?: () => number;
}

function reject(message: string): never {
  throw new ApiError('invalid_signature', message);
}

/**
 * `RateLimit-Policy` and `RateLimit` (IETF httpapi draft, structured fields): the credential's
 * bucket is `rate` requests a second with a burst of `rate × burstMultiplier`, written as that many
 * requests (`q`) per window of the burst's seconds (`w`); `r` is what is left after this request
 * and `t` the seconds until the bucket is full again.
 */
export function rateLimitFields(rate: number, burstMultiplier: number, left: { remaining: number; resetSeconds: number }): Record<string, string> {
  const quota = Math.max(1, Math.floor(rate * burstMultiplier + 1e-9));
  const window = Math.max(1, Math.ceil(burstMultiplier - 1e-9));
  return {
    'RateLimit-Policy': `"credential";q=${quota};w=${window}`,
    RateLimit: `"credential";r=${Math.max(0, Math.min(quota, left.remaining))};t=${Math.max(0, left.resetSeconds)}`,
  };
}

/**
 * CONTRACT §1's first step, before the body is read: a request without a key id is refused
 * whatever its body (an oversized or compressed one included), and its body is never read.
 */
export function requireKeyId(credentials?: Pick<CredentialService, 'peek' | 'resolve'>): Middleware<AppState> {
  // Not async: a credential held in memory (the usual case) costs the request no promise.
  return (ctx, next) => {
    const keyId = ctx.req.headers[HEADER.keyId];
    if (!keyId) throw new ApiError('missing_credentials', 'the X-Service-Key-Id header is required');
    if (!credentials || typeof keyId !== 'string') return next();
    // The key is resolved before the body is read: a made-up key id costs no body read.
    const credential = knownCredential(credentials, keyId);
    if (credential instanceof Promise) {
      return credential.then((resolved) => {
        ctx.state.credential = resolved;
        return next();
      });
    }
    ctx.state.credential = credential;
    return next();
  };
}

/** The credential of a key id, or the request refused (unknown, revoked, or of another environment); at once when held in memory. */
function knownCredential(credentials: Pick<CredentialService, 'peek' | 'resolve'>, keyId: string): ResolvedCredential | Promise<ResolvedCredential> {
  const environment = environmentOfKeyId(keyId);
  if (!environment) reject('unknown key id');
  const held = credentials.peek(keyId);
  return held ? usable(held.value, environment) : credentials.resolve(keyId).then((credential) => usable(credential, environment));
}

function usable(credential: ResolvedCredential | undefined, environment: Environment): ResolvedCredential {
  if (!credential || credential.environment !== environment) reject('unknown key id');
  if (credential.revoked) reject('this credential has been revoked');
  return credential;
}

/**
 * Requests one credential may have waiting for admission in this process at once: its share of the
 * admission queue (4,096 in Redis, 2,048 in Postgres), so one partner's flood never fills the
 * queue for everyone; beyond it, 429 rate_limited with Retry-After: 1.
 */
export const ADMISSION_SHARE_PER_CREDENTIAL = 256;

/** Requests waiting for admission per key id, per admission store (one store per app). */
const waitingByStore = new WeakMap<Admission, Map<string, number>>();

/** `scopes`: any one of them grants the route (the spec lists orders under search and buy). */
export function authenticate(deps: AuthDeps, scopes: readonly Scope[], read?: AdmittedRead): Middleware<AppState> {
  const now = deps.now ?? Date.now;
  if (!waitingByStore.has(deps.admission)) waitingByStore.set(deps.admission, new Map());
  const waiting = waitingByStore.get(deps.admission)!;
  return async (ctx, next) => {
    // Node's own header map (names lower case, as HEADER's): ctx.get lower-cases every name again.
    const headers = ctx.req.headers as Record<string, string | undefined>;
    // Present: requireKeyId ran first.
    const keyId = headers[HEADER.keyId] ?? '';

    const credential = ctx.state.credential ?? (await knownCredential(deps.credentials, keyId));

    const timestamp = headers[HEADER.timestamp] ?? '';
    if (!/^\d{1,12}$/.test(timestamp)) reject('X-Service-Timestamp must be Unix seconds');
    if (Math.abs(Math.floor(now() / 1000) - Number(timestamp)) > MAX_SKEW_SECONDS) {
      reject(`X-Service-Timestamp is more than ${MAX_SKEW_SECONDS} s away from server time`);
    }

    const nonce = headers[HEADER.nonce] ?? '';
    if (!UUID_V4.test(nonce)) reject('X-Service-Nonce must be a UUID v4');

    const rawUrl = ctx.req.url ?? '/';
    const q = rawUrl.indexOf('?');
    // Parsed once: validation reads the same pairs.
    const query = (ctx.state.queryPairs = queryPairs(q === -1 ? '' : rawUrl.slice(q + 1)));
    const signed = {
      keyId,
      timestamp,
      nonce,
      method: ctx.method,
      path: q === -1 ? rawUrl : rawUrl.slice(0, q),
      query,
      body: ctx.state.rawBody ?? Buffer.alloc(0),
    };
    if (!signatureMatches(credential.signingKey, signed, headers[HEADER.signature] ?? '')) reject('signature does not match');

    const scopeOk = scopes.some((s) => credential.scopes.includes(s));
    const readParams = read && deps.admission.makesReads ? read.params({ query: (ctx.state.rawQuery = queryObject(query)), environment: credential.environment }) : undefined;
    const mine = waiting.get(keyId) ?? 0;
    if (mine >= ADMISSION_SHARE_PER_CREDENTIAL) {
      admissionOutcomes.inc({ outcome: 'queue_full' });
      throw new ApiError('rate_limited', `this credential already has ${mine} requests waiting for admission in this process: slow down`, undefined, { 'Retry-After': '1' });
    }
    waiting.set(keyId, mine + 1);
    let admission: AdmissionResult;
    try {
      admission = await deps.admission.admit({
        keyId,
        nonce: nonce.toLowerCase(),
        scopeOk,
        ratePerSecond: deps.config.rateLimits.perSecond[credential.environment],
        rateOverride: credential.rateLimitPerSecond,
        burstMultiplier: deps.config.rateLimits.burstMultiplier,
        signedAt: timestamp,
        read: read && readParams ? { spec: read, params: readParams } : undefined,
      });
    } catch (err) {
      if (err instanceof AdmissionUnavailable) {
        admissionOutcomes.inc({ outcome: 'unavailable' });
        throw new ApiError('service_unavailable', 'the request could not be admitted right now; send it again (signed anew) shortly', undefined, { 'Retry-After': '1' });
      }
      throw err;
    } finally {
      const left = (waiting.get(keyId) ?? 1) - 1;
      if (left > 0) waiting.set(keyId, left);
      else waiting.delete(keyId);
    }

    admissionOutcomes.inc({ outcome: admission.outcome });
    // The IETF rate-limit fields (CONTRACT §14): the credential's policy and what is left of it.
    const limitFields = admission.rateLimit
      ? rateLimitFields(credential.rateLimitPerSecond ?? deps.config.rateLimits.perSecond[credential.environment], deps.config.rateLimits.burstMultiplier, admission.rateLimit)
      : {};
    switch (admission.outcome) {
      case 'admitted':
        break;
      case 'revoked':
        reject('this credential has been revoked');
      case 'signed_before_restart':
        // Not a bad credential: the replay store restarted and cannot tell whether this nonce was
        // used. Counted (partner_api_admission_total{outcome="signed_before_restart"}); a client
        // signs the request again and sends it, as for any 503.
        throw new ApiError('service_unavailable', 'the replay store restarted while this request was on its way: sign it again with the current time and send it', undefined, { 'Retry-After': '1' });
      case 'replayed':
        reject('this nonce has already been used');
      case 'forbidden':
        throw new ApiError('forbidden', `this credential lacks the ${scopes.join(' or ')} scope`);
      case 'rate_limited':
        throw new ApiError('rate_limited', 'rate limit exceeded; retry after the number of seconds in Retry-After', undefined, {
          ...limitFields,
          'Retry-After': String(admission.retryAfterSeconds),
        });
      default:
        throw new Error(`unexpected admission outcome ${admission.outcome}`);
    }
    ctx.set(limitFields);
    if (admission.admittedRead !== undefined) ctx.state.admittedRead = admission.admittedRead;
    ctx.state.auth = { keyId, partnerId: credential.partnerId, environment: credential.environment, scopes: credential.scopes };
    await next();
  };
}
