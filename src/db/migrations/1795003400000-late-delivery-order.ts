import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When the recovery sweep last woke an endpoint's delivery, so that it wakes late deliveries in
 * turn (the least recently woken first, then the oldest waiting event) rather than the same few
 * every minute. Raw SQL: a column added by a migration.
 */
export class LateDeliveryOrder1795003400000 implements MigrationInterface {
  name = 'LateDeliveryOrder1795003400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE webhook_endpoints ADD COLUMN woken_at timestamptz');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE webhook_endpoints DROP COLUMN woken_at');
  }
}
