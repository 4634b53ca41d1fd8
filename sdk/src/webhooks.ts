/**
 * Webhook signatures (CONTRACT §7). Every delivery carries the spec's header,
 * `X-Service-Signature: v1=<hex HMAC-SHA256 keyed with the webhook secret's text over
 * "<timestamp>.<raw body>">`. When the endpoint's secret is a `whsec_` secret it also carries the
 * Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64
 * HMAC-SHA256 keyed with the bytes after whsec_ over "<id>.<timestamp>.<raw body>">`, one `v1,`
 * per secret signing: two while a rotation's previous secret still signs), so any Standard
 * Webhooks library verifies it. The service's deliveries and `call events forward` sign with
 * webhookHeaders; partners verify with verifyWebhook, on the raw body exactly as received.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const WEBHOOK_TOLERANCE_SECONDS = 300;
export const STANDARD_SECRET_PREFIX = 'whsec_';
/** Random bytes of a generated secret (Standard Webhooks asks for 24 to 64). */
const GENERATED_SECRET_BYTES = 32;

export class WebhookVerificationError extends Error {
  readonly name = 'WebhookVerificationError';
}

export function signWebhook(secret: string, timestamp: string, rawBody: string | Buffer): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex')}`;
}

/** A new `whsec_` secret: the prefix and the base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `${STANDARD_SECRET_PREFIX}${randomBytes(GENERATED_SECRET_BYTES).toString('base64')}`;
}

/**
 * The key a `whsec_` secret gives Standard Webhooks signatures (the base64 after the prefix,
 * decoded), or undefined for any other secret. Strict: canonical base64 of 24 to 64 bytes.
 */
export function standardWebhookKey(secret: string): Buffer | undefined {
  if (!secret.startsWith(STANDARD_SECRET_PREFIX)) return undefined;
  const text = secret.slice(STANDARD_SECRET_PREFIX.length);
  const key = Buffer.from(text, 'base64');
  return key.length >= 24 && key.length <= 64 && key.toString('base64') === text ? key : undefined;
}

/** Why a secret that claims to be a `whsec_` secret is not one, or undefined. */
export function standardSecretProblem(secret: string): string | undefined {
  return secret.startsWith(STANDARD_SECRET_PREFIX) && !standardWebhookKey(secret) ? 'a whsec_ secret is whsec_ followed by the base64 of 24 to 64 random bytes (or leave secret out and one is generated)' : undefined;
}

function standardSignature(key: Buffer, eventId: string, timestamp: string, rawBody: string | Buffer): string {
  return `v1,${createHmac('sha256', key).update(`${eventId}.${timestamp}.`).update(rawBody).digest('base64')}`;
}

/**
 * The headers of one delivery of `rawBody` (the event as JSON), as the service sends them and
 * `call events forward` reproduces them; the timestamp is the attempt's, not the event's.
 * `secrets`: the endpoint's secret, then a previous one still signing during a rotation (each
 * whsec_ one among them signs in the Standard Webhooks header, sent when there is one; the spec's
 * header is the current secret's).
 */
export function webhookHeaders(secrets: string | readonly string[], eventId: string, timestamp: string, rawBody: string | Buffer): Record<string, string> {
  const [current, ...previous] = typeof secrets === 'string' ? [secrets] : secrets;
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'X-Service-Event-Id': eventId,
    'X-Service-Timestamp': timestamp,
    'X-Service-Signature': signWebhook(current!, timestamp, rawBody),
  };
  // Every whsec_ secret still signing: a rotation away from one (to a plain secret) leaves its
  // Standard Webhooks signature for the 24 hours too.
  const keys = [current!, ...previous].map(standardWebhookKey).filter((k): k is Buffer => !!k);
  if (keys.length > 0) {
    headers['webhook-id'] = eventId;
    headers['webhook-timestamp'] = timestamp;
    headers['webhook-signature'] = keys.map((k) => standardSignature(k, eventId, timestamp, rawBody)).join(' ');
  }
  return headers;
}

export interface WebhookEvent<T = unknown> {
  id: string;
  type: string;
  created_at: string;
  data: T;
}

type HeaderBag = Record<string, string | string[] | undefined> | Headers;

function header(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const value = headers[name] ?? headers[name.toLowerCase()] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Checks a delivery's signature and timestamp and returns the event. With a `whsec_` secret and
 * the Standard Webhooks headers present, those are checked (any one `v1,` signature matching);
 * otherwise the spec's `X-Service-Signature`. Throws WebhookVerificationError when the signature
 * does not match, the timestamp is missing or more than `toleranceSeconds` from now, or the event
 * id header disagrees with the body.
 *
 * `secret` may be several (the new one first): a delivery any one of them verifies is accepted.
 * That is how a receiver switches a secret that is not a `whsec_` one without losing an event:
 * `X-Service-Signature` carries only the endpoint's current secret's signature, so the receiver
 * takes both secrets from before its new one is registered until the old one is dropped.
 */
export function verifyWebhook<T = unknown>(delivery: { secret: string | readonly string[]; headers: HeaderBag; body: string | Buffer; toleranceSeconds?: number; now?: () => number }): WebhookEvent<T>;
export function verifyWebhook<T = unknown>(rawBody: string | Buffer, headers: HeaderBag, secret: string | readonly string[], options?: { toleranceSeconds?: number; now?: () => number }): WebhookEvent<T>;
export function verifyWebhook<T = unknown>(
  first: string | Buffer | { secret: string | readonly string[]; headers: HeaderBag; body: string | Buffer; toleranceSeconds?: number; now?: () => number },
  headersArg?: HeaderBag,
  secretArg?: string | readonly string[],
  optionsArg: { toleranceSeconds?: number; now?: () => number } = {},
): WebhookEvent<T> {
  // The object form (CONTRACT §14: verifyWebhook({ secret, headers, body })) or the positional one.
  const objectForm = typeof first === 'object' && !Buffer.isBuffer(first);
  const rawBody = objectForm ? first.body : first;
  const headers = objectForm ? first.headers : headersArg!;
  const secrets = objectForm ? first.secret : secretArg!;
  const options = objectForm ? { toleranceSeconds: first.toleranceSeconds, now: first.now } : optionsArg;
  if (typeof secrets === 'string') return verifyWith<T>(rawBody, headers, secrets, options);
  if (secrets.length === 0) throw new WebhookVerificationError('no secret to verify with');
  // The first secret's refusal is the one reported when none verifies.
  let refusal: unknown;
  for (const secret of secrets) {
    try {
      return verifyWith<T>(rawBody, headers, secret, options);
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      refusal ??= err;
    }
  }
  throw refusal;
}

function verifyWith<T>(rawBody: string | Buffer, headers: HeaderBag, secret: string, options: { toleranceSeconds?: number; now?: () => number }): WebhookEvent<T> {
  const key = standardWebhookKey(secret);
  const standard = key && header(headers, 'webhook-signature') !== undefined;
  const timestamp = header(headers, standard ? 'webhook-timestamp' : 'x-service-timestamp');
  if (!timestamp || !/^\d{1,12}$/.test(timestamp)) throw new WebhookVerificationError(`missing or malformed ${standard ? 'webhook-timestamp' : 'X-Service-Timestamp'}`);
  const eventId = header(headers, standard ? 'webhook-id' : 'x-service-event-id');
  if (standard) {
    const expected = Buffer.from(standardSignature(key, eventId ?? '', timestamp, rawBody).slice(3), 'base64');
    const matches = (header(headers, 'webhook-signature') ?? '').split(' ').some((given) => {
      const bytes = given.startsWith('v1,') ? Buffer.from(given.slice(3), 'base64') : Buffer.alloc(0);
      return bytes.length === expected.length && timingSafeEqual(bytes, expected);
    });
    if (!matches) throw new WebhookVerificationError('signature does not match');
  } else {
    const match = /^v1=([0-9a-f]{64})$/.exec(header(headers, 'x-service-signature') ?? '');
    if (!match) throw new WebhookVerificationError('missing or malformed X-Service-Signature');
    const expected = Buffer.from(signWebhook(secret, timestamp, rawBody).slice(3), 'hex');
    if (!timingSafeEqual(expected, Buffer.from(match[1]!, 'hex'))) throw new WebhookVerificationError('signature does not match');
  }
  const now = (options.now ?? Date.now)() / 1000;
  if (Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS)) {
    throw new WebhookVerificationError('timestamp outside the tolerance: a replayed or delayed delivery');
  }
  const event = JSON.parse(rawBody.toString()) as WebhookEvent<T>;
  if (eventId !== event.id) throw new WebhookVerificationError(`${standard ? 'webhook-id' : 'X-Service-Event-Id'} does not match the body`);
  return event;
}
