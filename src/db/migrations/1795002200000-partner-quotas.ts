import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-partner quotas (CONTRACT §15): an operator's raised limits of active quotes and open
 * brokerage cases, per environment; an index counts a partner's active quotes quickly. Raw SQL: a
 * table and an index made by a migration.
 */
export class PartnerQuotas1795002200000 implements MigrationInterface {
  name = 'PartnerQuotas1795002200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE partner_quotas (
        partner_id uuid NOT NULL REFERENCES partners(id),
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        active_quotes integer CHECK (active_quotes > 0),
        open_cases integer CHECK (open_cases > 0),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (partner_id, environment)
      )`);
    await q.query(`CREATE INDEX quotes_partner_active_idx ON quotes (partner_id, environment, expires_at) WHERE status = 'active'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX quotes_partner_active_idx');
    await q.query('DROP TABLE partner_quotas');
  }
}
