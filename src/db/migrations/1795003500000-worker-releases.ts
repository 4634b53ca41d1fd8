import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The releases whose workers have run here, and when (src/db/entities/worker-release.ts): what
 * decides when a deprecated workflow patch may be removed. Raw SQL: a table made by a migration.
 */
export class WorkerReleases1795003500000 implements MigrationInterface {
  name = 'WorkerReleases1795003500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE worker_releases (
        build_id text PRIMARY KEY,
        version text NOT NULL,
        first_seen_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE worker_releases');
  }
}
