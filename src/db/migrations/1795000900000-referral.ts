import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Referral (CONTRACT §11): tracking links, their clicks (a keyed visitor hash, never an IP),
 * hosted checkouts started from a referred browser, referred sales with their commission rate
 * fixed at the sale, and the commission lines as ledger postings (`referral_pending`,
 * `referral_accrued`, `referral_reversed`; `paid_out` is the payout posting). A house partner
 * owns the marketplace's own checkouts (a "Buy now" on a public page).
 */
export class Referral1795000900000 implements MigrationInterface {
  name = 'Referral1795000900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE referral_links (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        code text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        kind text NOT NULL CHECK (kind IN ('generic', 'domain', 'product')),
        domain text,
        product text,
        campaign text,
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((kind = 'domain') = (domain IS NOT NULL)),
        CHECK ((kind = 'product') = (product IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX referral_links_partner_idx ON referral_links (partner_id, environment, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE referral_clicks (
        id bigserial PRIMARY KEY,
        link_id uuid NOT NULL REFERENCES referral_links(id),
        partner_id uuid NOT NULL,
        environment text NOT NULL,
        visitor_hash text NOT NULL,
        day date NOT NULL,
        clicked_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX referral_clicks_partner_day_idx ON referral_clicks (partner_id, environment, day, link_id, visitor_hash)`);
    await q.query(`
      CREATE TABLE referral_checkouts (
        session_id uuid PRIMARY KEY REFERENCES checkout_sessions(id),
        link_id uuid NOT NULL REFERENCES referral_links(id),
        partner_id uuid NOT NULL,
        environment text NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX referral_checkouts_partner_idx ON referral_checkouts (partner_id, environment, started_at)`);
    await q.query(`
      CREATE TABLE referral_sales (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        link_id uuid NOT NULL REFERENCES referral_links(id),
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL,
        order_id uuid NOT NULL UNIQUE REFERENCES orders(id),
        buyer_email text NOT NULL,
        domain text NOT NULL,
        amount_cents bigint NOT NULL,
        commission_bps integer NOT NULL CHECK (commission_bps BETWEEN 0 AND 10000),
        commission_cents bigint NOT NULL,
        currency char(3) NOT NULL,
        occurred_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX referral_sales_partner_idx ON referral_sales (partner_id, environment, occurred_at DESC, id DESC)`);
    await q.query(`ALTER TABLE ledger_postings ADD COLUMN referral_sale_id uuid REFERENCES referral_sales(id)`);
    await q.query(`ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_kind_check`);
    await q.query(`ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_kind_check CHECK (kind IN ('sale', 'reversal', 'payout', 'referral_pending', 'referral_accrued', 'referral_reversed'))`);
    await q.query(`CREATE INDEX ledger_postings_referral_idx ON ledger_postings (partner_id, environment, id) WHERE referral_sale_id IS NOT NULL`);
    await q.query(`
      INSERT INTO partners (name, merchant_of_record, commission_partner_collected_bps, commission_service_collected_bps, commission_brokerage_bps, commission_referral_bps)
      VALUES ('marketplace (direct sales)', true, 0, 0, 0, 0) ON CONFLICT (name) DO NOTHING`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX ledger_postings_referral_idx`);
    await q.query(`ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_kind_check`);
    await q.query(`ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_kind_check CHECK (kind IN ('sale', 'reversal', 'payout'))`);
    await q.query(`ALTER TABLE ledger_postings DROP COLUMN referral_sale_id`);
    for (const table of ['referral_sales', 'referral_checkouts', 'referral_clicks', 'referral_links']) await q.query(`DROP TABLE ${table}`);
  }
}
