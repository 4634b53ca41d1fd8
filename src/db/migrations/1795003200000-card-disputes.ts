import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Disputes (chargebacks) of live card payments (CONTRACT §7, §9): one row per processor dispute,
 * and the ledger's postings for it (`dispute_opened`: the disputed amount held; `dispute_won`:
 * released; `dispute_lost`: given back to the buyer, the sale reversed as a refund is). Raw SQL: a
 * table, an index and a check constraint made by a migration.
 */
export class CardDisputes1795003200000 implements MigrationInterface {
  name = 'CardDisputes1795003200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE card_disputes (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        processor_dispute_id text NOT NULL UNIQUE,
        order_id uuid NOT NULL REFERENCES orders (id),
        partner_id uuid NOT NULL REFERENCES partners (id),
        environment text NOT NULL,
        amount_cents bigint NOT NULL CHECK (amount_cents >= 0),
        currency char(3) NOT NULL,
        status text NOT NULL CHECK (status IN ('open', 'won', 'lost')),
        reason text,
        opened_at timestamptz NOT NULL DEFAULT now(),
        closed_at timestamptz
      )`);
    await q.query(`CREATE INDEX card_disputes_open ON card_disputes (environment, opened_at) WHERE status = 'open'`);
    await q.query(`ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_kind_check`);
    await q.query(
      `ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_kind_check CHECK (kind IN ('sale', 'reversal', 'payout', 'referral_pending', 'referral_accrued', 'referral_reversed', 'card_payment', 'card_refund', 'commission_payable', 'dispute_opened', 'dispute_won', 'dispute_lost'))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_kind_check`);
    await q.query(`ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_kind_check CHECK (kind IN ('sale', 'reversal', 'payout', 'referral_pending', 'referral_accrued', 'referral_reversed', 'card_payment', 'card_refund', 'commission_payable'))`);
    await q.query('DROP TABLE card_disputes');
  }
}
