import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The workers' code that has run here, and when (src/db/entities/worker-release.ts): what decides
 * when a workflow patch may be deprecated, and then removed. Raw SQL: a table made by a migration.
 */
export class WorkerReleases1795003500000 implements MigrationInterface {
  name = 'WorkerReleases1795003500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE worker_releases (
        id text PRIMARY KEY,
        build_id text NOT NULL,
        version text NOT NULL,
        patches text[] NOT NULL,
        deprecated_patches text[] NOT NULL,
        first_seen_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE worker_releases');
  }
}
