import pino, { type Logger } from 'pino';

/**
 * Structured JSON logs. Secrets, signatures and key material are redacted by path wherever they
 * might appear in a logged object, and so is what a buyer gave (name, email, address, card
 * digits), also inside a database error: its query parameters and its detail (`Key (…)=(…)`).
 */
const BUYER_FIELDS = ['email', 'buyer_email', 'buyerEmail', 'buyer_name', 'buyerName', 'customer_email', 'customerEmail', 'registrant', 'card_number', 'cardNumber', 'cvc', 'address', 'phone', 'payingDetails', 'paying_details'];
const DATABASE_ERROR_FIELDS = ['err.parameters', 'err.detail', 'err.driverError.parameters', 'err.driverError.detail', 'err.cause.parameters', 'err.cause.detail'];
/**
 * Errors as pino serialises them, but a database error's message and stack never repeat a value
 * of its query's parameters (Postgres quotes the offending value: `invalid input syntax …: "…"`).
 */
function errWithoutParameters(err: Error & { parameters?: unknown[] }): ReturnType<typeof pino.stdSerializers.err> {
  const out = pino.stdSerializers.err(err);
  const values = (err?.parameters ?? []).filter((v): v is string => typeof v === 'string' && v.length >= 3);
  if (!values.length) return out;
  // Every string of the serialised error (its message, stack, the driver's error within it).
  const scrub = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return values.reduce((t, v) => t.split(v).join('[redacted]'), value);
    if (depth > 4 || value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1));
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v, depth + 1)]));
  };
  return scrub(out, 0) as typeof out;
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      serializers: { err: errWithoutParameters },
      base: { service: 'partner-api' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'secret',
          '*.secret',
          'headers["x-service-signature"]',
          '*.headers["x-service-signature"]',
          'headers.authorization',
          '*.headers.authorization',
          'masterKey',
          '*.masterKey',
          ...BUYER_FIELDS.flatMap((f) => [f, `*.${f}`]),
          ...DATABASE_ERROR_FIELDS,
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
