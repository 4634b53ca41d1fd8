import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Declined card attempts per checkout session, so that a session stops taking cards after a few
 * declines (card testing). Raw SQL: a column added by a migration.
 */
export class CheckoutDeclines1795001800000 implements MigrationInterface {
  name = 'CheckoutDeclines1795001800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE checkout_sessions ADD COLUMN declined_attempts integer NOT NULL DEFAULT 0');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE checkout_sessions DROP COLUMN declined_attempts');
  }
}
