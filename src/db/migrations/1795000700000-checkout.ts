import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Hosted checkout (CONTRACT §9): sessions, the card payment taken on one (at most one: unique on
 * the session, so a double submit or a second tab charges once), and the order it became.
 */
export class Checkout1795000700000 implements MigrationInterface {
  name = 'Checkout1795000700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE checkout_sessions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        domain_id uuid NOT NULL REFERENCES domains(id),
        domain text NOT NULL,
        price_cents bigint NOT NULL CHECK (price_cents >= 0),
        currency char(3) NOT NULL,
        success_url text,
        cancel_url text,
        customer_email text,
        client_reference_id text,
        status text NOT NULL CHECK (status IN ('open', 'complete', 'expired')),
        order_id uuid REFERENCES orders(id),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        closed_at timestamptz,
        CHECK ((status = 'complete') = (order_id IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX checkout_sessions_partner_idx ON checkout_sessions (partner_id, environment, created_at DESC)`);
    await q.query(`
      CREATE TABLE checkout_payments (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        session_id uuid NOT NULL UNIQUE REFERENCES checkout_sessions(id),
        processor text NOT NULL,
        payment_ref text NOT NULL UNIQUE,
        amount_cents bigint NOT NULL,
        currency char(3) NOT NULL,
        card_last4 char(4) NOT NULL,
        buyer_name text NOT NULL,
        buyer_email text NOT NULL,
        registrant jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`ALTER TABLE orders ADD COLUMN checkout_session_id uuid UNIQUE REFERENCES checkout_sessions(id)`);
    await q.query(`ALTER TABLE orders ADD COLUMN client_reference_id text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE orders DROP COLUMN client_reference_id`);
    await q.query(`ALTER TABLE orders DROP COLUMN checkout_session_id`);
    await q.query(`DROP TABLE checkout_payments`);
    await q.query(`DROP TABLE checkout_sessions`);
  }
}
