import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A slow card processor never leaves a charge without an order (issue: money, round four):
 * - `checkout_payments.payer_browser`: a digest of the browser session whose attempt paid; the
 *   receipt is shown to that browser only (payments recorded before this release have none, and
 *   show no receipt on a second submit);
 * - `card_attempt_checks`: attempts given up without the processor's answer (released, or stale
 *   when an approval came), asked again by the recovery sweep until it answers; an approval
 *   found for one is voided.
 */
export class CardAttemptChecks1795002900000 implements MigrationInterface {
  name = 'CardAttemptChecks1795002900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE checkout_payments ADD COLUMN payer_browser text');
    await q.query(`
      CREATE TABLE card_attempt_checks (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        session_id uuid NOT NULL REFERENCES checkout_sessions (id),
        environment text NOT NULL,
        idempotency_key text NOT NULL UNIQUE,
        browser text,
        released_at timestamptz NOT NULL DEFAULT now(),
        asks integer NOT NULL DEFAULT 0,
        last_asked_at timestamptz,
        resolved_at timestamptz,
        outcome text CHECK (outcome IN ('declined', 'voided', 'recorded', 'never_seen'))
      )`);
    await q.query('CREATE INDEX card_attempt_checks_unresolved ON card_attempt_checks (released_at) WHERE resolved_at IS NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE card_attempt_checks');
    await q.query('ALTER TABLE checkout_payments DROP COLUMN payer_browser');
  }
}
