import type { MigrationInterface, QueryRunner } from 'typeorm';
import { notifyListingChangesSql } from './1795001400000-change-feed';

/**
 * A statement that changes 100 names or fewer whose names pass 8,000 bytes together (long names,
 * a small import) failed: NOTIFY refuses such a payload. Such a statement now sends `*` instead.
 * Raw SQL: a trigger function, which TypeORM entities do not express.
 */
export class ListingNotifySize1795001600000 implements MigrationInterface {
  name = 'ListingNotifySize1795001600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(notifyListingChangesSql(true));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(notifyListingChangesSql(false));
  }
}
