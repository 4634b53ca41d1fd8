/**
 * The deployment's own roles (deploy/postgres-init.sh makes them) exist only there: a migration's
 * grants to or revocations from one run where it exists and are skipped where it does not (a
 * database under npm start or in the tests). One `DO` block, each role's statements in turn.
 */
export function forDeploymentRoles(statementsByRole: Record<string, string>): string {
  const blocks = Object.entries(statementsByRole).map(
    ([role, statements]) => `        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${role}') THEN\n${statements.trim().replace(/^\s*/gm, '          ')}\n        END IF;`,
  );
  return `\n      DO $$\n      BEGIN\n${blocks.join('\n')}\n      END $$`;
}
