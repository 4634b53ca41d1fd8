import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A card payment in three steps (the processor is never called inside a transaction): a session
 * records the attempt out with the processor (`paying_since`, what to record once approved); the
 * sandbox processor keeps its own record of charges and refunds by idempotency key; the ledger
 * books the card's money in and out (`card_payment`, `card_refund`), and a service-collected
 * commission becomes payable when its refund window passes (`commission_payable`). Raw SQL: tables, columns and
 * a check constraint made by a migration.
 */
export class CardPayments1795002100000 implements MigrationInterface {
  name = 'CardPayments1795002100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE checkout_sessions
      ADD COLUMN payment_attempt integer NOT NULL DEFAULT 0,
      ADD COLUMN paying_since timestamptz,
      ADD COLUMN paying_details jsonb,
      ADD CONSTRAINT checkout_sessions_paying_has_details CHECK ((paying_since IS NULL) = (paying_details IS NULL))`);
    await q.query(`CREATE INDEX checkout_sessions_paying_idx ON checkout_sessions (paying_since) WHERE paying_since IS NOT NULL`);
    await q.query(`
      CREATE TABLE sandbox_card_charges (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        idempotency_key text NOT NULL UNIQUE,
        payment_ref text NOT NULL UNIQUE,
        status text NOT NULL CHECK (status IN ('approved', 'declined', 'voided')),
        decline_reason text,
        amount_cents bigint NOT NULL CHECK (amount_cents >= 0),
        currency char(3) NOT NULL,
        card_last4 char(4) NOT NULL,
        refunded_cents bigint NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0 AND refunded_cents <= amount_cents),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE sandbox_card_refunds (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        idempotency_key text NOT NULL UNIQUE,
        charge_id uuid NOT NULL REFERENCES sandbox_card_charges(id),
        amount_cents bigint NOT NULL CHECK (amount_cents > 0),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_kind_check`);
    await q.query(`ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_kind_check CHECK (kind IN ('sale', 'reversal', 'payout', 'referral_pending', 'referral_accrued', 'referral_reversed', 'card_payment', 'card_refund', 'commission_payable'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_kind_check`);
    await q.query(`ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_kind_check CHECK (kind IN ('sale', 'reversal', 'payout', 'referral_pending', 'referral_accrued', 'referral_reversed'))`);
    await q.query(`DROP TABLE sandbox_card_refunds`);
    await q.query(`DROP TABLE sandbox_card_charges`);
    await q.query(`DROP INDEX checkout_sessions_paying_idx`);
    await q.query(`ALTER TABLE checkout_sessions DROP CONSTRAINT checkout_sessions_paying_has_details, DROP COLUMN paying_details, DROP COLUMN paying_since, DROP COLUMN payment_attempt`);
  }
}
