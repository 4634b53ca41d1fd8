import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `admission_store`: which store decides admission (src/auth/admission-store.ts). Every database
 * so far was admitted by Postgres, so that is the starting row.
 */
export class AdmissionStore1795001500000 implements MigrationInterface {
  name = 'AdmissionStore1795001500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE admission_store (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        store text NOT NULL CHECK (store IN ('postgres', 'redis')),
        switched_at timestamptz NOT NULL
      )`);
    await q.query(`INSERT INTO admission_store (store, switched_at) VALUES ('postgres', now())`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE admission_store`);
  }
}
