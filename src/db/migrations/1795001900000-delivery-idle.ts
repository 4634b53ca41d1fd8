import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether a partner's delivery workflow waits for new events (true) or is pushing one: a wake-up
 * signals only a waiting delivery, so a delivery retrying one event for days gains no history.
 * True by default: a delivery started before this column existed is woken as before. Raw SQL: a
 * column added by a migration.
 */
export class DeliveryIdle1795001900000 implements MigrationInterface {
  name = 'DeliveryIdle1795001900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE webhook_endpoints ADD COLUMN delivery_idle boolean NOT NULL DEFAULT true');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE webhook_endpoints DROP COLUMN delivery_idle');
  }
}
