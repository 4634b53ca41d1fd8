import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An idempotent replay answers the first response's bytes: `json` keeps the body as it was
 * written, where `jsonb` reordered its keys (the replay was equal as JSON, not as text).
 * Raw SQL: a column type change, which migrations state in SQL.
 */
export class IdempotentReplayBytes1795001700000 implements MigrationInterface {
  name = 'IdempotentReplayBytes1795001700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE json USING response_body::json');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE jsonb USING response_body::jsonb');
  }
}
