import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook endpoints, per-partner event sequence numbers and delivery records.
 *
 * `partner_seq` numbers each partner's events (per environment) in commit order: appending an
 * event takes the partner's counter row lock until its transaction commits, so a reader never
 * sees seq n+1 before seq n exists. That is what lets `/events` cursors resume exactly.
 */
export class Webhooks1795000200000 implements MigrationInterface {
  name = 'Webhooks1795000200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE event_counters (
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL,
        last_seq bigint NOT NULL,
        PRIMARY KEY (partner_id, environment)
      )`);
    await q.query(`ALTER TABLE events ADD COLUMN partner_seq bigint`);
    await q.query(`
      WITH numbered AS (SELECT seq, row_number() OVER (PARTITION BY partner_id, environment ORDER BY seq) AS n FROM events)
      UPDATE events e SET partner_seq = numbered.n FROM numbered WHERE numbered.seq = e.seq`);
    await q.query(`
      INSERT INTO event_counters (partner_id, environment, last_seq)
      SELECT partner_id, environment, max(partner_seq) FROM events GROUP BY partner_id, environment`);
    await q.query(`ALTER TABLE events ALTER COLUMN partner_seq SET NOT NULL`);
    await q.query(`CREATE UNIQUE INDEX events_partner_seq_uidx ON events (partner_id, environment, partner_seq)`);
    await q.query(`DROP INDEX events_partner_seq_idx`);

    await q.query(`
      CREATE TABLE webhook_endpoints (
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        url text NOT NULL,
        secret_sealed bytea NOT NULL,
        enabled boolean NOT NULL DEFAULT true,
        delivered_through_seq bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (partner_id, environment)
      )`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        event_id text PRIMARY KEY REFERENCES events(id),
        partner_id uuid NOT NULL,
        environment text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        last_error text,
        last_attempt_at timestamptz,
        url text,
        finished_at timestamptz
      )`);
    await q.query(`CREATE INDEX webhook_deliveries_partner_idx ON webhook_deliveries (partner_id, environment, status)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhook_endpoints`);
    await q.query(`CREATE INDEX events_partner_seq_idx ON events (partner_id, environment, seq)`);
    await q.query(`DROP INDEX events_partner_seq_uidx`);
    await q.query(`ALTER TABLE events DROP COLUMN partner_seq`);
    await q.query(`DROP TABLE event_counters`);
  }
}
