import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Whether a referred sale's 30-day workflow was started, so the recovery sweep can start any a crash left unstarted. */
export class ReferralRecovery1795000950000 implements MigrationInterface {
  name = 'ReferralRecovery1795000950000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE referral_sales ADD COLUMN workflow_started boolean NOT NULL DEFAULT false`);
    await q.query(`CREATE INDEX referral_sales_unstarted_idx ON referral_sales (occurred_at) WHERE NOT workflow_started`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE referral_sales DROP COLUMN workflow_started`);
  }
}
