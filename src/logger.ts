import pino, { type Logger } from 'pino';

/**
 * Structured JSON logs. Secrets, signatures and key material are redacted by path wherever they
 * might appear in a logged object.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
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
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
