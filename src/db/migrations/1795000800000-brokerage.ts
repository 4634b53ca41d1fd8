import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Brokerage (CONTRACT §10): cases and their timelines (the read model the case workflow writes),
 * and brokered deals as transactions.
 *
 * At most one open case per name and environment: a partial unique index, so two partners racing
 * for one name get one case whatever order their requests commit in (the loser is answered
 * 422 domain_not_eligible, reason in_case). A case fixes its tier's fee and the partner's
 * brokerage rate when it is opened, so later rate changes do not touch it.
 *
 * A transaction now records either an order's sale or a brokered deal: `order_id` or
 * `brokerage_case_id`, exactly one (a deal is booked once: unique case).
 *
 * Ledger accounts a brokered deal of price P, fee F and partner share S adds to the ledger
 * migration's list (debit positive):
 *   escrow_held                  + P, the buyer's funds the service holds
 *   escrow_payable_seller        − (P − F), what the seller is owed
 *   brokerage_fees               − F, the service's brokerage income
 *   partner_commission_expense   + S, and service_owes_partner − S (paid by a payout)
 */
export class Brokerage1795000800000 implements MigrationInterface {
  name = 'Brokerage1795000800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE brokerage_cases (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        domain text NOT NULL,
        tier text NOT NULL CHECK (tier IN ('managed', 'self_serve')),
        status text NOT NULL CHECK (status IN ('requested', 'researching', 'owner_contacted', 'negotiating', 'agreed', 'payment_secured', 'transferring', 'completed', 'closed')),
        buyer_email text NOT NULL,
        budget_cents bigint NOT NULL CHECK (budget_cents >= 0),
        currency char(3) NOT NULL,
        fee_bps integer NOT NULL CHECK (fee_bps BETWEEN 0 AND 10000),
        partner_share_bps integer NOT NULL CHECK (partner_share_bps BETWEEN 0 AND 10000),
        price_cents bigint CHECK (price_cents > 0),
        fee_cents bigint,
        partner_share_cents bigint,
        moves integer NOT NULL DEFAULT 1,
        follow_ups_sent integer NOT NULL DEFAULT 0,
        link_version integer NOT NULL DEFAULT 1,
        close_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        closed_at timestamptz,
        CHECK ((status IN ('completed', 'closed')) = (closed_at IS NOT NULL)),
        CHECK (status <> 'completed' OR (price_cents IS NOT NULL AND fee_cents IS NOT NULL AND partner_share_cents IS NOT NULL))
      )`);
    // Postgres feature: a partial unique index (one open case per name and environment).
    await q.query(`CREATE UNIQUE INDEX brokerage_cases_open_name_idx ON brokerage_cases (environment, domain) WHERE status NOT IN ('completed', 'closed')`);
    await q.query(`CREATE INDEX brokerage_cases_partner_idx ON brokerage_cases (partner_id, environment, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE brokerage_timeline (
        case_id uuid NOT NULL REFERENCES brokerage_cases(id),
        seq integer NOT NULL,
        status text NOT NULL,
        at timestamptz NOT NULL,
        detail text,
        PRIMARY KEY (case_id, seq)
      )`);

    await q.query(`ALTER TABLE transactions ALTER COLUMN order_id DROP NOT NULL`);
    await q.query(`ALTER TABLE transactions ADD COLUMN brokerage_case_id uuid UNIQUE REFERENCES brokerage_cases(id)`);
    await q.query(`ALTER TABLE transactions ADD CONSTRAINT transactions_one_source CHECK (num_nonnulls(order_id, brokerage_case_id) = 1)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE transactions DROP CONSTRAINT transactions_one_source`);
    await q.query(`ALTER TABLE transactions DROP COLUMN brokerage_case_id`);
    await q.query(`ALTER TABLE transactions ALTER COLUMN order_id SET NOT NULL`);
    await q.query(`DROP TABLE brokerage_timeline`);
    await q.query(`DROP TABLE brokerage_cases`);
  }
}
