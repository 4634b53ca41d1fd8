import type { MigrationInterface, QueryRunner } from 'typeorm';
import { forDeploymentRoles } from './deployment-roles';

/**
 * The operators' Temporal UI gate (src/temporal/ui-gate.ts) faces every signed-in employee, and
 * needs only to append to the audit trail: its role (deploy/postgres-init.sh makes it; a database
 * without it, as under npm start and in the tests, is left as it is) may insert into
 * `operator_actions` (reading back the id, time and outcome the database filled in) and read the list of migrations each process
 * checks at its start, and nothing else. Raw SQL: privileges are the server's, not an entity's.
 */
export class UiGateRole1795003800000 implements MigrationInterface {
  name = 'UiGateRole1795003800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      forDeploymentRoles({
        partner_api_ui_gate: `
          REVOKE ALL ON ALL TABLES IN SCHEMA public FROM partner_api_ui_gate;
          REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM partner_api_ui_gate;
          GRANT INSERT ON operator_actions TO partner_api_ui_gate;
          -- The insert reads back what the database filled in (id, at, outcome); no operator's name or arguments.
          GRANT SELECT (id, at, outcome) ON operator_actions TO partner_api_ui_gate;
          GRANT USAGE ON SEQUENCE operator_actions_id_seq TO partner_api_ui_gate;
          GRANT SELECT ON migrations TO partner_api_ui_gate;`,
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      forDeploymentRoles({
        partner_api_ui_gate: `
          REVOKE ALL ON ALL TABLES IN SCHEMA public FROM partner_api_ui_gate;
          REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM partner_api_ui_gate;`,
      }),
    );
  }
}
