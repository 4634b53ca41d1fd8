import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The double-entry ledger (CONTRACT §8): postings and the settlements, payouts and referral terms
 * that are sums over their entries.
 *
 * A posting is one business event (`order:<id>:completed`, `order:<id>:reversed`, `payout:<id>`),
 * unique by that idempotency key, with entries that sum to zero (checked at commit by a deferred
 * constraint trigger), in the period (calendar month, UTC) it was booked into. Entries are
 * append-only (the hardening migration's triggers); corrections are new postings.
 *
 * Accounts, amounts positive on the debit side:
 *   sales                        − gross of every sale (credit)
 *   partner_owes_service         + what a partner-collected sale leaves the partner owing
 *   partner_commission_retained  + the commission a partner kept from the price it collected
 *   buyer_payments               + money the service collected from a buyer (hosted checkout)
 *   partner_commission_expense   + commission the service owes on a service-collected or brokered sale
 *   service_owes_partner         − what the service owes the partner (credit); a payout debits it
 *   service_cash                 − money paid out to partners
 *
 * Existing sales (booked before this migration with two one-sided entries) get their posting
 * and the balancing `sales` entry, so every posting sums to zero.
 */
export class Ledger1795000600000 implements MigrationInterface {
  name = 'Ledger1795000600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE settlements (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        period_start date NOT NULL CHECK (extract(day FROM period_start) = 1),
        period_end date NOT NULL,
        currency char(3) NOT NULL,
        status text NOT NULL CHECK (status IN ('open', 'closed')),
        gross_sold_cents bigint,
        commission_retained_cents bigint,
        amount_owed_to_service_cents bigint,
        closed_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (partner_id, environment, period_start),
        CHECK ((status = 'open') = (closed_at IS NULL)),
        CHECK (status = 'open' OR (gross_sold_cents IS NOT NULL AND commission_retained_cents IS NOT NULL AND amount_owed_to_service_cents IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX settlements_open_idx ON settlements (period_start) WHERE status = 'open'`);

    await q.query(`
      CREATE TABLE payouts (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        period_start date NOT NULL,
        period_end date NOT NULL,
        currency char(3) NOT NULL,
        status text NOT NULL CHECK (status IN ('paid')),
        paid_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX payouts_partner_idx ON payouts (partner_id, environment, paid_at DESC, id DESC)`);

    await q.query(`
      CREATE TABLE ledger_postings (
        id bigserial PRIMARY KEY,
        idempotency_key text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        kind text NOT NULL CHECK (kind IN ('sale', 'reversal', 'payout')),
        payment_model text CHECK (payment_model IN ('partner_collected', 'service_collected', 'brokerage')),
        transaction_id uuid REFERENCES transactions(id),
        payout_id uuid REFERENCES payouts(id),
        period_start date NOT NULL,
        occurred_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX ledger_postings_period_idx ON ledger_postings (partner_id, environment, period_start)`);
    await q.query(`CREATE INDEX ledger_postings_transaction_idx ON ledger_postings (transaction_id)`);

    await q.query(`
      CREATE TABLE payout_lines (
        payout_id uuid NOT NULL REFERENCES payouts(id),
        posting_id bigint NOT NULL UNIQUE REFERENCES ledger_postings(id),
        PRIMARY KEY (payout_id, posting_id)
      )`);

    await q.query(`ALTER TABLE ledger_entries ADD COLUMN posting_id bigint REFERENCES ledger_postings(id)`);
    await q.query(`ALTER TABLE ledger_entries ALTER COLUMN transaction_id DROP NOT NULL`);
    await q.query(`CREATE INDEX ledger_entries_posting_idx ON ledger_entries (posting_id)`);

    // Backfill: existing sales become postings. The append-only triggers are lifted for this one
    // statement of the migration and put back before it ends.
    await q.query(`
      INSERT INTO settlements (public_id, partner_id, environment, period_start, period_end, currency, status)
      SELECT DISTINCT ON (t.partner_id, t.environment, date_trunc('month', t.occurred_at AT TIME ZONE 'UTC'))
             'stl_' || substr(md5(random()::text), 1, 24), t.partner_id, t.environment,
             date_trunc('month', t.occurred_at AT TIME ZONE 'UTC')::date,
             (date_trunc('month', t.occurred_at AT TIME ZONE 'UTC') + interval '1 month - 1 day')::date, t.currency, 'open'
      FROM transactions t`);
    await q.query(`
      INSERT INTO ledger_postings (idempotency_key, partner_id, environment, kind, payment_model, transaction_id, period_start, occurred_at)
      SELECT 'order:' || t.order_id || ':completed', t.partner_id, t.environment, 'sale', t.payment_model, t.id,
             date_trunc('month', t.occurred_at AT TIME ZONE 'UTC')::date, t.occurred_at
      FROM transactions t`);
    await q.query(`ALTER TABLE ledger_entries DISABLE TRIGGER USER`);
    await q.query(`UPDATE ledger_entries e SET posting_id = p.id FROM ledger_postings p WHERE p.transaction_id = e.transaction_id`);
    await q.query(`ALTER TABLE ledger_entries ENABLE TRIGGER USER`);
    await q.query(`
      INSERT INTO ledger_entries (posting_id, partner_id, environment, transaction_id, account, amount_cents, currency)
      SELECT p.id, t.partner_id, t.environment, t.id, 'sales', -t.gross_cents, t.currency
      FROM transactions t JOIN ledger_postings p ON p.transaction_id = t.id WHERE t.payment_model = 'partner_collected'`);
    await q.query(`ALTER TABLE ledger_entries ALTER COLUMN posting_id SET NOT NULL`);

    // Postgres feature: a deferred constraint trigger checks each posting's balance at commit.
    await q.query(`
      CREATE FUNCTION ledger_posting_balances() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE v_sum bigint;
      BEGIN
        SELECT coalesce(sum(amount_cents), 0) INTO v_sum FROM ledger_entries WHERE posting_id = NEW.posting_id;
        IF v_sum <> 0 THEN
          RAISE EXCEPTION 'ledger posting % does not balance: its entries sum to %', NEW.posting_id, v_sum;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE CONSTRAINT TRIGGER ledger_posting_balances AFTER INSERT ON ledger_entries
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_posting_balances()`);

    await q.query(`ALTER TABLE transactions ADD COLUMN status text NOT NULL DEFAULT 'completed' CHECK (status IN ('completed', 'reversed'))`);
    await q.query(`ALTER TABLE transactions ADD COLUMN reversed_at timestamptz`);
    await q.query(`CREATE INDEX transactions_partner_filter_idx ON transactions (partner_id, environment, occurred_at DESC, id DESC)`);

    await q.query(`ALTER TABLE partners ADD COLUMN commission_referral_bps integer NOT NULL DEFAULT 500 CHECK (commission_referral_bps BETWEEN 0 AND 10000)`);
    await q.query(`ALTER TABLE partners ALTER COLUMN commission_referral_bps DROP DEFAULT`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE partners DROP COLUMN commission_referral_bps`);
    await q.query(`DROP INDEX transactions_partner_filter_idx`);
    await q.query(`ALTER TABLE transactions DROP COLUMN reversed_at`);
    await q.query(`ALTER TABLE transactions DROP COLUMN status`);
    await q.query(`DROP TRIGGER ledger_posting_balances ON ledger_entries`);
    await q.query(`DROP FUNCTION ledger_posting_balances()`);
    await q.query(`ALTER TABLE ledger_entries DISABLE TRIGGER USER`);
    await q.query(`DELETE FROM ledger_entries WHERE account = 'sales'`);
    await q.query(`ALTER TABLE ledger_entries DROP COLUMN posting_id`);
    await q.query(`ALTER TABLE ledger_entries ENABLE TRIGGER USER`);
    await q.query(`DROP TABLE payout_lines`);
    await q.query(`DROP TABLE ledger_postings`);
    await q.query(`DROP TABLE payouts`);
    await q.query(`DROP TABLE settlements`);
  }
}
