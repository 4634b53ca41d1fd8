import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Safe for strangers (CONTRACT §15): referral clicks become one row per link, visitor and UTC day
 * with a count (a flood of `/r/` grows no table without bound; the existing clicks are folded into
 * those rows), and the admission store records which Redis (its random id) decided admission.
 * Raw SQL: tables changed by a migration.
 */
export class BoundedClicksStoreId1795002300000 implements MigrationInterface {
  name = 'BoundedClicksStoreId1795002300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE referral_click_days (
        link_id uuid NOT NULL REFERENCES referral_links(id),
        partner_id uuid NOT NULL,
        environment text NOT NULL,
        visitor_hash text NOT NULL,
        day date NOT NULL,
        clicks integer NOT NULL CHECK (clicks > 0),
        first_clicked_at timestamptz NOT NULL,
        last_clicked_at timestamptz NOT NULL,
        PRIMARY KEY (link_id, visitor_hash, day)
      )`);
    await q.query(`
      INSERT INTO referral_click_days (link_id, partner_id, environment, visitor_hash, day, clicks, first_clicked_at, last_clicked_at)
      SELECT link_id, min(partner_id::text)::uuid, min(environment), visitor_hash, day, count(*), min(clicked_at), max(clicked_at)
        FROM referral_clicks GROUP BY link_id, visitor_hash, day`);
    await q.query('DROP TABLE referral_clicks');
    await q.query('ALTER TABLE referral_click_days RENAME TO referral_clicks');
    await q.query('ALTER TABLE referral_clicks RENAME CONSTRAINT referral_click_days_pkey TO referral_clicks_pkey');
    await q.query('CREATE INDEX referral_clicks_partner_first_idx ON referral_clicks (partner_id, environment, first_clicked_at)');
    await q.query('ALTER TABLE admission_store ADD COLUMN store_id text');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE admission_store DROP COLUMN store_id');
    await q.query(`
      CREATE TABLE referral_click_rows (
        id bigserial PRIMARY KEY,
        link_id uuid NOT NULL REFERENCES referral_links(id),
        partner_id uuid NOT NULL,
        environment text NOT NULL,
        visitor_hash text NOT NULL,
        day date NOT NULL,
        clicked_at timestamptz NOT NULL
      )`);
    // Each day's clicks come back as that many rows at its first click's time (the times between are not kept).
    await q.query(`
      INSERT INTO referral_click_rows (link_id, partner_id, environment, visitor_hash, day, clicked_at)
      SELECT link_id, partner_id, environment, visitor_hash, day, first_clicked_at FROM referral_clicks, generate_series(1, clicks)`);
    await q.query('DROP TABLE referral_clicks');
    await q.query('ALTER TABLE referral_click_rows RENAME TO referral_clicks');
    await q.query(`CREATE INDEX referral_clicks_partner_day_idx ON referral_clicks (partner_id, environment, day, link_id, visitor_hash)`);
  }
}
