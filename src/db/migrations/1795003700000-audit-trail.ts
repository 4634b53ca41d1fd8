import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An audit trail operators can trust: each command is recorded before it acts (`started`), and
 * its outcome (`succeeded`, `refused`, `failed`) in a row of its own pointing at it, so nothing
 * is ever updated; and `operator_actions` refuses UPDATE, DELETE and TRUNCATE to every role but
 * its owner (as the ledger does), whatever privileges a role is given. Raw SQL: a check
 * constraint and a trigger made by a migration.
 */
export class AuditTrail1795003700000 implements MigrationInterface {
  name = 'AuditTrail1795003700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE operator_actions ADD COLUMN outcome text NOT NULL DEFAULT 'succeeded' CHECK (outcome IN ('started', 'succeeded', 'refused', 'failed'))`);
    await q.query(`ALTER TABLE operator_actions ADD COLUMN attempt_id bigint REFERENCES operator_actions (id)`);
    await q.query(`ALTER TABLE operator_actions ADD COLUMN error text`);
    await q.query(`CREATE UNIQUE INDEX operator_actions_outcome ON operator_actions (attempt_id) WHERE attempt_id IS NOT NULL`);
    await q.query(`
      CREATE FUNCTION operator_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF current_user = (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = TG_RELID) THEN
          RETURN COALESCE(NEW, OLD);
        END IF;
        RAISE EXCEPTION 'operator_actions is append-only: % refused', TG_OP USING ERRCODE = 'restrict_violation';
      END $$`);
    await q.query(`CREATE TRIGGER operator_actions_no_update_or_delete BEFORE UPDATE OR DELETE ON operator_actions FOR EACH ROW EXECUTE FUNCTION operator_actions_append_only()`);
    await q.query(`CREATE TRIGGER operator_actions_no_truncate BEFORE TRUNCATE ON operator_actions FOR EACH STATEMENT EXECUTE FUNCTION operator_actions_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER operator_actions_no_truncate ON operator_actions');
    await q.query('DROP TRIGGER operator_actions_no_update_or_delete ON operator_actions');
    await q.query('DROP FUNCTION operator_actions_append_only()');
    await q.query('DROP INDEX operator_actions_outcome');
    await q.query('ALTER TABLE operator_actions DROP COLUMN error, DROP COLUMN attempt_id, DROP COLUMN outcome');
  }
}
