import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Quotes, partner-collected orders with their timeline, idempotency keys, refunds, the event
 * outbox, transactions with their ledger entries, and the sandbox registrar's transfer records.
 */
export class Orders1795000100000 implements MigrationInterface {
  name = 'Orders1795000100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE quotes (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL,
        domain_id uuid NOT NULL REFERENCES domains(id),
        domain text NOT NULL,
        price_cents bigint NOT NULL CHECK (price_cents >= 0),
        currency char(3) NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'consumed', 'expired')),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        closed_at timestamptz
      )`);
    await q.query(`CREATE INDEX quotes_partner_idx ON quotes (partner_id, created_at DESC)`);
    await q.query(`ALTER TABLE domains ADD COLUMN reserved_by_quote_id uuid REFERENCES quotes(id)`);

    await q.query(`
      CREATE TABLE orders (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL,
        quote_id uuid UNIQUE REFERENCES quotes(id),
        domain_id uuid NOT NULL REFERENCES domains(id),
        domain text NOT NULL,
        sale_price_cents bigint NOT NULL CHECK (sale_price_cents >= 0),
        currency char(3) NOT NULL,
        external_payment_ref text NOT NULL,
        payment_model text NOT NULL CHECK (payment_model IN ('partner_collected', 'service_collected')),
        status text NOT NULL,
        failure_reason text,
        workflow_started boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX orders_partner_created_idx ON orders (partner_id, environment, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX orders_unstarted_idx ON orders (created_at) WHERE NOT workflow_started`);
    await q.query(`
      CREATE TABLE order_timeline (
        order_id uuid NOT NULL REFERENCES orders(id),
        status text NOT NULL,
        at timestamptz NOT NULL,
        detail text,
        PRIMARY KEY (order_id, status)
      )`);

    await q.query(`
      CREATE TABLE idempotency_keys (
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL,
        key uuid NOT NULL,
        operation text NOT NULL,
        request_hash text NOT NULL,
        response_status integer,
        response_body jsonb,
        order_id uuid REFERENCES orders(id),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (partner_id, environment, key)
      )`);

    await q.query(`
      CREATE TABLE refunds (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        order_id uuid NOT NULL UNIQUE REFERENCES orders(id),
        partner_id uuid NOT NULL REFERENCES partners(id),
        amount_cents bigint NOT NULL,
        currency char(3) NOT NULL,
        reason text,
        status text NOT NULL CHECK (status IN ('succeeded')),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);

    await q.query(`
      CREATE TABLE events (
        seq bigserial PRIMARY KEY,
        id text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL,
        type text NOT NULL,
        data jsonb NOT NULL,
        dedupe_key text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX events_partner_seq_idx ON events (partner_id, environment, seq)`);

    await q.query(`
      CREATE TABLE transactions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        public_id text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL,
        order_id uuid NOT NULL UNIQUE REFERENCES orders(id),
        domain text NOT NULL,
        payment_model text NOT NULL CHECK (payment_model IN ('partner_collected', 'service_collected', 'brokerage')),
        gross_cents bigint NOT NULL,
        commission_cents bigint NOT NULL,
        currency char(3) NOT NULL,
        occurred_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX transactions_partner_idx ON transactions (partner_id, environment, occurred_at DESC)`);
    await q.query(`
      CREATE TABLE ledger_entries (
        id bigserial PRIMARY KEY,
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL,
        transaction_id uuid NOT NULL REFERENCES transactions(id),
        account text NOT NULL,
        amount_cents bigint NOT NULL,
        currency char(3) NOT NULL,
        reverses_entry_id bigint UNIQUE REFERENCES ledger_entries(id),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX ledger_entries_partner_idx ON ledger_entries (partner_id, environment, created_at)`);
    await q.query(`
      CREATE RULE ledger_entries_no_update AS ON UPDATE TO ledger_entries DO INSTEAD NOTHING;
      CREATE RULE ledger_entries_no_delete AS ON DELETE TO ledger_entries DO INSTEAD NOTHING`);

    await q.query(`
      CREATE TABLE sandbox_registrar_transfers (
        order_id uuid PRIMARY KEY REFERENCES orders(id),
        transfer_ref text NOT NULL UNIQUE,
        state text NOT NULL,
        polls integer NOT NULL DEFAULT 0,
        requested_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['sandbox_registrar_transfers', 'ledger_entries', 'transactions', 'events', 'refunds', 'idempotency_keys', 'order_timeline', 'orders']) {
      await q.query(`DROP TABLE ${table}`);
    }
    await q.query(`ALTER TABLE domains DROP COLUMN reserved_by_quote_id`);
    await q.query(`DROP TABLE quotes`);
  }
}
