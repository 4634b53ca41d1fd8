import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The checkout session's paid signal is delivered durably (issue: money, round four): a session
 * records when its workflow was told of the payment, and the recovery sweep signals again any paid
 * session not yet marked. Sessions paid before this release count as told: their workflows start
 * the refund window at the latest when their 7 days end, and the window is counted from the
 * payment's recorded time either way.
 */
export class PaidSignal1795002800000 implements MigrationInterface {
  name = 'PaidSignal1795002800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE checkout_sessions ADD COLUMN paid_signalled_at timestamptz');
    await q.query("UPDATE checkout_sessions SET paid_signalled_at = closed_at WHERE status = 'complete'");
    // The sweep's question: paid sessions whose workflow has not been told yet.
    await q.query("CREATE INDEX checkout_sessions_unsignalled ON checkout_sessions (closed_at) WHERE status = 'complete' AND paid_signalled_at IS NULL");
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX checkout_sessions_unsignalled');
    await q.query('ALTER TABLE checkout_sessions DROP COLUMN paid_signalled_at');
  }
}
