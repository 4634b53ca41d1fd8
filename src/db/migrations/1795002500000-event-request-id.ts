import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The partner's request that wrote an event (operators only; src/api/request-store.ts). Raw SQL: a column added by a migration. */
export class EventRequestId1795002500000 implements MigrationInterface {
  name = 'EventRequestId1795002500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE events ADD COLUMN request_id text');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE events DROP COLUMN request_id');
  }
}
