import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { recordAttempt, recordOutcome } from '../../src/admin/audit';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { createDataSource } from '../../src/db/data-source';
import { EMBEDDED_PASSWORD, EMBEDDED_USER, embeddedUrl, startEmbeddedPostgres, type RunningPostgres } from '../../src/db/embedded-postgres';
import { freePort } from '../../src/main/child-process';
import { getStack } from '../helpers/stack';

const run = promisify(execFile);

/**
 * Least privilege, tried as each role (issue: safe in front of strangers, round two): the
 * deployment's own deploy/postgres-init.sh makes the roles on the suite's Postgres (with
 * passwords a shell or SQL would trip over), the migrations run as the owner, as compose's
 * migration job does, and each role is refused what it must not do.
 */
describe("the database's roles: each refused what it must not do", function () {
  this.timeout(120_000);
  const passwords = { owner: `own'er "pw" $HOME \\`, app: `app';DROP ROLE x;--`, search: 'sea rch$(id)', uiGate: 'ga\'te`x`', temporal: "tem'poral" };
  // A Postgres of its own: the script makes cluster-wide roles and the database partner_api, which
  // the suite's own database already is.
  let dir: string;
  let port: number;
  let server: RunningPostgres;
  const as = (role: string, password: string) => {
    const url = new URL(embeddedUrl(port));
    url.username = role;
    url.password = password;
    return url.toString();
  };
  const denied = async (client: pg.Client, sql: string) => {
    await assert.rejects(client.query(sql), /permission denied/, sql);
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'roles-pg-'));
    port = await freePort();
    server = await startEmbeddedPostgres(path.join(dir, 'data'), port);
    // As a fresh Postgres volume is: no partner_api database yet (the helper makes one).
    const admin = new pg.Client({ connectionString: embeddedUrl(port, 'postgres') });
    await admin.connect();
    await admin.query('DROP DATABASE partner_api');
    await admin.end();
    const env = {
      ...process.env,
      PGHOST: '127.0.0.1',
      PGPORT: String(port),
      PGPASSWORD: EMBEDDED_PASSWORD,
      POSTGRES_USER: EMBEDDED_USER,
      PARTNER_API_OWNER_PASSWORD: passwords.owner,
      PARTNER_API_APP_PASSWORD: passwords.app,
      PARTNER_API_SEARCH_PASSWORD: passwords.search,
      PARTNER_API_UI_GATE_PASSWORD: passwords.uiGate,
      TEMPORAL_DB_PASSWORD: passwords.temporal,
    };
    await run('sh', [path.join(getStack().config.projectRoot, 'deploy', 'postgres-init.sh')], { env });
    const owner = createDataSource(as('partner_api_owner', passwords.owner));
    await owner.initialize();
    try {
      await owner.runMigrations({ transaction: 'each' });
    } finally {
      await owner.destroy();
    }
  });

  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the search role reads the inventory and nothing else: not credentials, partners, buyers or the ledger', async () => {
    const client = new pg.Client({ connectionString: as('partner_api_search', passwords.search) });
    await client.connect();
    try {
      await client.query('SELECT name FROM domains LIMIT 1');
      await client.query('SELECT name FROM migrations LIMIT 1');
      for (const table of ['credentials', 'partners', 'checkout_sessions', 'partner_applications', 'emails', 'ledger_postings', 'operator_actions', 'webhook_endpoints']) {
        await denied(client, `SELECT * FROM ${table} LIMIT 1`);
      }
      await denied(client, `UPDATE domains SET label = label WHERE false`);
    } finally {
      await client.end();
    }
  });

  it('the Temporal UI gate\'s role appends to the audit trail (through the entity, as the gate does) and does nothing else', async () => {
    const gate = createDataSource(as('partner_api_ui_gate', passwords.uiGate));
    await gate.initialize();
    try {
      const attempt = await recordAttempt(gate, 'temporal SignalWorkflowExecution', { signalName: 'x' }, 'role test');
      await recordOutcome(gate, attempt, 'succeeded');
      await assert.rejects(gate.query('SELECT operator FROM operator_actions LIMIT 1'), /permission denied/);
      for (const table of ['credentials', 'partners', 'orders', 'ledger_postings', 'domains']) await assert.rejects(gate.query(`SELECT 1 FROM ${table} LIMIT 1`), /permission denied/, table);
      await assert.rejects(gate.query(`UPDATE operator_actions SET operator = 'x' WHERE false`), /permission denied/);
      await assert.rejects(gate.query(`INSERT INTO partners (id) VALUES (gen_random_uuid())`), /permission denied/);
    } finally {
      await gate.destroy();
    }
  });

  it('the app role writes rows but can neither change nor delete the ledger or the audit trail, nor change the schema', async () => {
    const client = new pg.Client({ connectionString: as('partner_api_app', passwords.app) });
    await client.connect();
    try {
      await client.query('SELECT 1 FROM credentials LIMIT 1');
      await client.query(`INSERT INTO operator_actions (operator, command, arguments) VALUES ('role test', 'audit', '{}')`);
      await client.query('SELECT 1 FROM ledger_postings LIMIT 1');
      for (const table of ['ledger_entries', 'ledger_postings', 'operator_actions']) {
        await denied(client, `UPDATE ${table} SET id = id WHERE false`);
        await denied(client, `DELETE FROM ${table} WHERE false`);
      }
      await denied(client, 'CREATE TABLE sneaky (x int)');
      await denied(client, 'TRUNCATE orders');
      // Given the privilege by mistake, the audit trail still refuses: a trigger for every role but its owner.
      const owner = new pg.Client({ connectionString: as('partner_api_owner', passwords.owner) });
      await owner.connect();
      try {
        await owner.query('GRANT UPDATE, DELETE ON operator_actions TO partner_api_app');
      } finally {
        await owner.end();
      }
      await assert.rejects(client.query(`UPDATE operator_actions SET operator = 'someone else'`), /append-only/);
      await assert.rejects(client.query('DELETE FROM operator_actions'), /append-only/);
    } finally {
      await client.end();
    }
  });
});
