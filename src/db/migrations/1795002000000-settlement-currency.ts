import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sums never add two currencies (CONTRACT §8): a settlement is one row per partner, environment,
 * month and currency, and /transactions reads one currency's rows (its keyset index leads with
 * it). Raw SQL: a table constraint and an index replaced by a migration.
 */
export class SettlementCurrency1795002000000 implements MigrationInterface {
  name = 'SettlementCurrency1795002000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE settlements DROP CONSTRAINT settlements_partner_id_environment_period_start_key');
    await q.query('ALTER TABLE settlements ADD CONSTRAINT settlements_partner_period_currency_key UNIQUE (partner_id, environment, period_start, currency)');
    await q.query('DROP INDEX transactions_partner_filter_idx');
    await q.query('CREATE INDEX transactions_partner_currency_idx ON transactions (partner_id, environment, currency, occurred_at DESC, id DESC)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX transactions_partner_currency_idx');
    await q.query('CREATE INDEX transactions_partner_filter_idx ON transactions (partner_id, environment, occurred_at DESC, id DESC)');
    await q.query('ALTER TABLE settlements DROP CONSTRAINT settlements_partner_period_currency_key');
    await q.query('ALTER TABLE settlements ADD CONSTRAINT settlements_partner_id_environment_period_start_key UNIQUE (partner_id, environment, period_start)');
  }
}
