import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Safe for strangers (CONTRACT §15): referral clicks become one row per link, visitor and UTC day
 * with a count (a flood of `/r/` grows no table without bound). The table is changed in place:
 * each group's first row takes the group's count and first and last click, the others go. The
 * admission store records which Redis (its random id) decided admission. Raw SQL: tables changed
 * by a migration.
 */
export class BoundedClicksStoreId1795002300000 implements MigrationInterface {
  name = 'BoundedClicksStoreId1795002300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE referral_clicks ADD COLUMN clicks integer, ADD COLUMN first_clicked_at timestamptz, ADD COLUMN last_clicked_at timestamptz');
    await q.query(`
      UPDATE referral_clicks c SET clicks = g.n, first_clicked_at = g.first_at, last_clicked_at = g.last_at
        FROM (SELECT min(id) AS id, count(*) AS n, min(clicked_at) AS first_at, max(clicked_at) AS last_at
                FROM referral_clicks GROUP BY link_id, visitor_hash, day) g
       WHERE c.id = g.id`);
    await q.query('DELETE FROM referral_clicks WHERE clicks IS NULL');
    await q.query('DROP INDEX referral_clicks_partner_day_idx');
    await q.query('ALTER TABLE referral_clicks DROP CONSTRAINT referral_clicks_pkey, DROP COLUMN id, DROP COLUMN clicked_at');
    await q.query(`
      ALTER TABLE referral_clicks
        ALTER COLUMN clicks SET NOT NULL, ADD CONSTRAINT referral_clicks_clicks_check CHECK (clicks > 0),
        ALTER COLUMN first_clicked_at SET NOT NULL, ALTER COLUMN last_clicked_at SET NOT NULL,
        ADD PRIMARY KEY (link_id, visitor_hash, day)`);
    await q.query('CREATE INDEX referral_clicks_partner_first_idx ON referral_clicks (partner_id, environment, first_clicked_at)');
    await q.query('ALTER TABLE admission_store ADD COLUMN store_id text');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE admission_store DROP COLUMN store_id');
    await q.query('DROP INDEX referral_clicks_partner_first_idx');
    await q.query('ALTER TABLE referral_clicks DROP CONSTRAINT referral_clicks_pkey, DROP CONSTRAINT referral_clicks_clicks_check');
    // Each day's clicks come back as that many rows at its first click's time (the times between are not kept).
    await q.query(`
      INSERT INTO referral_clicks (link_id, partner_id, environment, visitor_hash, day, clicks, first_clicked_at, last_clicked_at)
      SELECT link_id, partner_id, environment, visitor_hash, day, 1, first_clicked_at, first_clicked_at
        FROM referral_clicks, generate_series(2, clicks)`);
    await q.query('ALTER TABLE referral_clicks ADD COLUMN id bigserial PRIMARY KEY, ADD COLUMN clicked_at timestamptz');
    await q.query('UPDATE referral_clicks SET clicked_at = first_clicked_at');
    await q.query('ALTER TABLE referral_clicks ALTER COLUMN clicked_at SET NOT NULL, DROP COLUMN clicks, DROP COLUMN first_clicked_at, DROP COLUMN last_clicked_at');
    await q.query('CREATE INDEX referral_clicks_partner_day_idx ON referral_clicks (partner_id, environment, day, link_id, visitor_hash)');
  }
}
