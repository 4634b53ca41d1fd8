import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The card processor's events handled (CONTRACT §9): an event id seen again changes nothing. */
export class ProcessorEvents1795003100000 implements MigrationInterface {
  name = 'ProcessorEvents1795003100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE processor_events (
        event_id text PRIMARY KEY,
        processor text NOT NULL,
        type text NOT NULL,
        outcome text NOT NULL,
        handled_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE processor_events');
  }
}
