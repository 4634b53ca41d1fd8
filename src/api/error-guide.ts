/**
 * What each error code means and what a partner's client does about it: the reference's error
 * page (/docs/errors, where every error's `doc_url` points) and the OpenAPI description.
 */
import { ERROR_STATUS, type ErrorCode } from './errors';

export interface ErrorGuide {
  code: ErrorCode;
  status: number;
  meaning: string;
  action: string;
  /** Send the same request again (with the same Idempotency-Key where it takes one). */
  retry: boolean;
}

const GUIDE: Record<ErrorCode, Omit<ErrorGuide, 'code' | 'status'>> = {
  validation_error: {
    meaning: 'A parameter, header or body field is missing, malformed or out of range; details names each field (body.secret, query.limit) and what is wrong with it.',
    action: 'Fix the request; sending it unchanged fails the same way.',
    retry: false,
  },
  missing_credentials: { meaning: 'No X-Service-Key-Id header: the request is not signed.', action: 'Sign every /api/partner request (the signing guide in the reference).', retry: false },
  invalid_signature: {
    meaning: 'The key is unknown or revoked, the timestamp is malformed or more than 300 s from the server clock, the nonce is not a UUID or was used already, or the signature does not match the canonical string. The message says which.',
    action: 'Check the clock, sign again with a new nonce and the current time; compare your canonical string with the worked example.',
    retry: false,
  },
  forbidden: { meaning: 'The credential lacks the scope the route needs (each operation names its scope), or the object belongs to the other environment.', action: 'Ask for a credential with that scope.', retry: false },
  sandbox_only: { meaning: 'Sandbox fast-forward works with sandbox credentials only; live timers always run their full time.', action: 'Call it with a pk_test_ credential.', retry: false },
  merchant_of_record_required: { meaning: 'Only partners that are merchant of record may record sales they charged themselves.', action: 'Use the hosted checkout, or ask to become merchant of record.', retry: false },
  affiliate_account_required: { meaning: 'Referral routes need a credential linked to an affiliate account.', action: 'Ask for the credential to be linked to an affiliate account.', retry: false },
  not_found: { meaning: 'No such route, or no such object for this partner and environment (another partner\'s object is never shown).', action: 'Check the path and the id.', retry: false },
  method_not_allowed: { meaning: 'The path exists but not with this method; Allow lists the methods it has.', action: 'Use a method from the Allow header.', retry: false },
  conflict: { meaning: 'The state does not allow it now: the name is reserved or sold, an Idempotency-Key was reused with a different body, or (sandbox fast-forward) the object waits on nothing.', action: 'Read the object again and decide; a new attempt needs a new Idempotency-Key.', retry: false },
  price_mismatch: { meaning: 'The sale price sent is not the quote\'s price.', action: 'Charge and send the quoted price_cents, or ask for a new quote.', retry: false },
  quote_expired: { meaning: 'The quote is older than its 10 minutes, or was used by another order.', action: 'Ask for a new quote.', retry: false },
  refund_not_allowed: { meaning: 'The order cannot be refunded: its transfer completed, or the refund window closed.', action: 'Nothing to retry; contact the marketplace for a manual case.', retry: false },
  domain_not_eligible: { meaning: 'The name cannot be sold or brokered as asked (unlisted, in a case already, or not eligible for the tier).', action: 'Choose another name or tier; the message says why.', retry: false },
  rate_limited: {
    meaning: 'Over the credential\'s rate limit, or too many of its requests wait for admission in one process.',
    action: 'Wait the seconds in Retry-After, then send it again signed anew; the refused request changed nothing.',
    retry: true,
  },
  quota_exceeded: { meaning: 'The partner holds as many open quotes or brokerage cases as its quota allows.', action: 'Let quotes expire or use them, or close cases; an operator can raise the quota.', retry: false },
  internal_error: { meaning: 'An unexpected failure; it is logged with the request id and nothing was half-written.', action: 'Retry with exponential back-off (the same Idempotency-Key); quote request_id to support if it persists.', retry: true },
  service_unavailable: {
    meaning: 'A part the service needs (its database, Temporal, the admission store or the search process) is restarting, or the replay store restarted while the request was on its way.',
    action: 'Retry after the seconds in Retry-After, with the same Idempotency-Key and signed anew (the SDK\'s clients do it by themselves).',
    retry: true,
  },
};

/** Every error code with its status, meaning and what to do, in status order. */
export function errorGuide(): ErrorGuide[] {
  return (Object.keys(ERROR_STATUS) as ErrorCode[]).map((code) => ({ code, status: ERROR_STATUS[code], ...GUIDE[code] })).sort((a, b) => a.status - b.status);
}
