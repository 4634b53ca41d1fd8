import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Which operator did each manual act through the admin CLI (src/admin/audit.ts). Raw SQL: a table made by a migration. */
export class OperatorActions1795002400000 implements MigrationInterface {
  name = 'OperatorActions1795002400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE operator_actions (
        id bigserial PRIMARY KEY,
        operator text NOT NULL,
        command text NOT NULL,
        arguments jsonb NOT NULL,
        at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query('CREATE INDEX operator_actions_at_idx ON operator_actions (at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE operator_actions');
  }
}
