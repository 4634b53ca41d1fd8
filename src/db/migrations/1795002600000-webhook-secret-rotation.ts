import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A webhook secret replaced keeps signing for 24 hours (CONTRACT §7): the previous secret, sealed
 * as the current one is, and until when it signs. Raw SQL: columns added by a migration.
 */
export class WebhookSecretRotation1795002600000 implements MigrationInterface {
  name = 'WebhookSecretRotation1795002600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_sealed bytea, ADD COLUMN previous_secret_until timestamptz');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_sealed, DROP COLUMN previous_secret_until');
  }
}
