import type { MigrationInterface, QueryRunner } from 'typeorm';
import { admitRequestsFunction, NEAREST_MICROSECOND_INTERVAL } from './1795002700000-admission-rate-limit-state';

/**
 * A full bucket admits its whole burst (CONTRACT §2: a burst of twice the rate), not one fewer. The
 * bucket is kept in whole microseconds, and the time between two tokens was 1 s / rate to the
 * nearest microsecond: where that rounds up (6 or 17 a second), the burst's last request came
 * after the window and was refused (33 of 34 at 17 a second). The interval is now rounded down
 * (and at least a microsecond), as the Redis script rounds it (src/auth/redis-admission.ts): below
 * 721 a second the burst is exactly whole. Above, a microsecond is a larger share of the interval
 * and the rounding can show: at some rates the burst holds a request or a few more (3,003 of 3,000
 * at 1,500 a second) and the long run runs up to rate² / 1,000,000 a second faster (1.5 at 1,500);
 * rounding to the nearest had the same order of error both ways. The default rates (25 and 100)
 * are exact either way.
 *
 * Raw SQL: a plpgsql function, which TypeORM entities do not express. CREATE OR REPLACE keeps the
 * function's owner and the roles' EXECUTE (least-privilege).
 */
export const WHOLE_MICROSECOND_INTERVAL = 'make_interval(secs => GREATEST(1, FLOOR(1000000 / v_rate)) / 1000000)';

export class AdmissionWholeBurst1795003900000 implements MigrationInterface {
  name = 'AdmissionWholeBurst1795003900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(admitRequestsFunction('CREATE OR REPLACE', WHOLE_MICROSECOND_INTERVAL));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(admitRequestsFunction('CREATE OR REPLACE', NEAREST_MICROSECOND_INTERVAL));
  }
}
