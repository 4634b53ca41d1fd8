import type { MigrationInterface, QueryRunner } from 'typeorm';
import { forDeploymentRoles } from './deployment-roles';

/**
 * Least privilege for the deployment's roles (deploy/postgres-init.sh makes them; a database
 * without them, as under npm start and in the tests, is left as it is): the search process's role
 * reads the inventory (`domains`, and the `migrations` table each process checks at its start)
 * and nothing else, not sealed credentials nor buyers' contact
 * details; the app role can neither change nor delete the ledger or the operators' audit trail.
 * Raw SQL: privileges are the server's, not an entity's.
 */
export class LeastPrivilege1795003600000 implements MigrationInterface {
  name = 'LeastPrivilege1795003600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      forDeploymentRoles({
        partner_api_search: `
          REVOKE ALL ON ALL TABLES IN SCHEMA public FROM partner_api_search;
          REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM partner_api_search;
          -- The inventory, and the list of migrations run (every process checks it at its start).
          GRANT SELECT ON domains, migrations TO partner_api_search;
          -- Tables made from now on by this (the owner) role: nothing for the search role.
          ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM partner_api_search;`,
        partner_api_app: `
          REVOKE UPDATE, DELETE, TRUNCATE ON ledger_entries, ledger_postings, operator_actions FROM partner_api_app;`,
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      forDeploymentRoles({
        partner_api_search: `
          GRANT SELECT ON ALL TABLES IN SCHEMA public TO partner_api_search;
          ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO partner_api_search;`,
        partner_api_app: `
          GRANT UPDATE, DELETE ON ledger_entries, ledger_postings, operator_actions TO partner_api_app;`,
      }),
    );
  }
}
