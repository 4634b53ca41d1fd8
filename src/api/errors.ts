/**
 * Errors are values with a code from the contract (CONTRACT §2); one middleware maps them to
 * HTTP. Handlers throw these, never bare Errors for expected outcomes.
 */
export const ERROR_STATUS = {
  validation_error: 400,
  missing_credentials: 401,
  invalid_signature: 401,
  forbidden: 403,
  sandbox_only: 403,
  merchant_of_record_required: 403,
  affiliate_account_required: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  price_mismatch: 422,
  quote_expired: 422,
  refund_not_allowed: 422,
  domain_not_eligible: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface FieldIssue {
  field: string;
  issue: string;
}

export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: FieldIssue[],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
  }
}

/** Where the reference explains an error code (CONTRACT §14: every error object has `doc_url`). */
export function errorDocUrl(origin: string, code: string): string {
  return `${origin}/docs/errors#${code}`;
}

export function errorBody(code: ErrorCode, message: string, requestId: string, details?: FieldIssue[]) {
  return { error: { code, message, request_id: requestId, ...(details?.length ? { details } : {}) } };
}
