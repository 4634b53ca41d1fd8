import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Partners' applications and the emails the service owes (CONTRACT §16): `partner_applications`,
 * `emails` (an outbox keyed by business event) and a partner's contact email. Raw SQL: tables,
 * check constraints and partial indexes made by a migration.
 */
export class OnboardingEmail1795003300000 implements MigrationInterface {
  name = 'OnboardingEmail1795003300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE partners ADD COLUMN contact_email text`);
    await q.query(`
      CREATE TABLE partner_applications (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        origin text NOT NULL DEFAULT 'page' CHECK (origin IN ('page', 'operator')),
        company_name text NOT NULL,
        contact_email text,
        website text,
        description text,
        merchant_of_record boolean NOT NULL,
        status text NOT NULL CHECK (status IN ('applied', 'expired', 'verified', 'live_requested', 'approved', 'rejected')),
        partner_id uuid UNIQUE REFERENCES partners (id),
        checklist jsonb,
        live_scopes text[],
        live_key_id text,
        rejection_reason text,
        history jsonb NOT NULL DEFAULT '[]',
        created_at timestamptz NOT NULL DEFAULT now(),
        verified_at timestamptz,
        live_requested_at timestamptz,
        reminded_at timestamptz,
        decided_at timestamptz,
        workflow_started_at timestamptz,
        live_revealed_at timestamptz
      )`);
    await q.query(`CREATE INDEX partner_applications_status ON partner_applications (status, created_at)`);
    await q.query(`CREATE INDEX partner_applications_unstarted ON partner_applications (created_at) WHERE workflow_started_at IS NULL`);
    await q.query(`
      CREATE TABLE emails (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        key text NOT NULL UNIQUE,
        kind text NOT NULL,
        recipient text NOT NULL,
        partner_id uuid,
        data jsonb NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        last_error text,
        message_id text,
        sending_until timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        sent_at timestamptz
      )`);
    await q.query(`CREATE INDEX emails_pending ON emails (created_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX emails_partner ON emails (partner_id, created_at) WHERE partner_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE emails');
    await q.query('DROP TABLE partner_applications');
    await q.query('ALTER TABLE partners DROP COLUMN contact_email');
  }
}
