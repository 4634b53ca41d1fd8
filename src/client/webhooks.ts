/**
 * Webhook signatures (CONTRACT §7): `X-Service-Signature: v1=<hex HMAC-SHA256 keyed with the
 * webhook secret over "<timestamp>.<raw body>">`. The service's deliveries and `call events
 * forward` sign with webhookHeaders; partners verify with verifyWebhook, on the raw body exactly
 * as received.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const WEBHOOK_TOLERANCE_SECONDS = 300;

export class WebhookVerificationError extends Error {
  readonly name = 'WebhookVerificationError';
}

export function signWebhook(secret: string, timestamp: string, rawBody: string | Buffer): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex')}`;
}

/**
 * The headers of one delivery of `rawBody` (the event as JSON), as the service sends them and
 * `call events forward` reproduces them; the timestamp is the attempt's, not the event's.
 */
export function webhookHeaders(secret: string, eventId: string, timestamp: string, rawBody: string | Buffer): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    'X-Service-Event-Id': eventId,
    'X-Service-Timestamp': timestamp,
    'X-Service-Signature': signWebhook(secret, timestamp, rawBody),
  };
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
 * Checks a delivery's signature and timestamp and returns the event. Throws
 * WebhookVerificationError when the signature does not match, the timestamp is missing or more
 * than `toleranceSeconds` from now, or the event id header disagrees with the body.
 */
export function verifyWebhook<T = unknown>(
  rawBody: string | Buffer,
  headers: HeaderBag,
  secret: string,
  options: { toleranceSeconds?: number; now?: () => number } = {},
): WebhookEvent<T> {
  const timestamp = header(headers, 'x-service-timestamp');
  const signature = header(headers, 'x-service-signature');
  if (!timestamp || !/^\d{1,12}$/.test(timestamp)) throw new WebhookVerificationError('missing or malformed X-Service-Timestamp');
  const match = /^v1=([0-9a-f]{64})$/.exec(signature ?? '');
  if (!match) throw new WebhookVerificationError('missing or malformed X-Service-Signature');
  const expected = Buffer.from(signWebhook(secret, timestamp, rawBody).slice(3), 'hex');
  const given = Buffer.from(match[1], 'hex');
  if (!timingSafeEqual(expected, given)) throw new WebhookVerificationError('signature does not match');
  const now = (options.now ?? Date.now)() / 1000;
  if (Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS)) {
    throw new WebhookVerificationError('timestamp outside the tolerance: a replayed or delayed delivery');
  }
  const event = JSON.parse(rawBody.toString()) as WebhookEvent<T>;
  const eventId = header(headers, 'x-service-event-id');
  if (eventId !== event.id) throw new WebhookVerificationError('X-Service-Event-Id does not match the body');
  return event;
}
