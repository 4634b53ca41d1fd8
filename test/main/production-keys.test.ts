import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getStack } from '../helpers/stack';

/** Runs a production entry point as `npm run start:api` etc. do; resolves with its exit code and stderr. */
function run(entryPoint: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const inherited = { ...process.env };
  for (const name of ['MASTER_KEY', 'QUOTE_SIGNING_KEY', 'DATABASE_URL', 'TEMPORAL_ADDRESS']) delete inherited[name];
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(getStack().config.projectRoot, 'dist/src/main', `${entryPoint}.js`)], { env: { ...inherited, ...env }, timeout: 30_000 }, (err, _stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr });
    });
  });
}

describe('production entry points refuse to start without MASTER_KEY and QUOTE_SIGNING_KEY', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-keys-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  for (const entryPoint of ['api', 'worker', 'migrate']) {
    it(`${entryPoint}: exits 1 with a clear message, generating nothing in DATA_DIR`, async () => {
      const { code, stderr } = await run(entryPoint, { DATA_DIR: dataDir, TEMPORAL_ADDRESS: '127.0.0.1:1' });
      assert.equal(code, 1, stderr);
      assert.match(stderr, new RegExp(`^${entryPoint}: refusing to start without MASTER_KEY and QUOTE_SIGNING_KEY`));
      assert.match(stderr, /npm start/, 'points developers at the dev stack');
      assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
      assert.deepEqual(readdirSync(dataDir), [], 'no key file made up');
    });
  }

  it('names the one key that is missing', async () => {
    const { code, stderr } = await run('api', { DATA_DIR: dataDir, MASTER_KEY: 'ab'.repeat(32) });
    assert.equal(code, 1);
    assert.match(stderr, /refusing to start without QUOTE_SIGNING_KEY \(/);
  });

  it('the admin CLI invents no key outside development: with NODE_ENV=production and no MASTER_KEY it refuses, making nothing', async () => {
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const inherited = { ...process.env };
      for (const name of ['MASTER_KEY', 'QUOTE_SIGNING_KEY']) delete inherited[name];
      execFile(
        process.execPath,
        [path.join(getStack().config.projectRoot, 'dist/src/admin/cli.js'), 'credential', 'create', '--partner', 'nobody', '--env', 'sandbox', '--scopes', 'search', '--json'],
        { env: { ...inherited, NODE_ENV: 'production', ADMIN_OPERATOR: 'keys test', DATA_DIR: dataDir, DATABASE_URL: getStack().databaseUrl }, timeout: 30_000 },
        (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
      );
    });
    assert.equal(code, 1, stderr);
    assert.match(stderr, /MASTER_KEY is required in production/);
    assert.deepEqual(readdirSync(dataDir), [], 'no key file made up');
  });

  it('the API in production refuses to start without PUBLIC_BASE_URL, rather than hand out links to localhost', async () => {
    const { code, stderr } = await run('api', { DATA_DIR: dataDir, NODE_ENV: 'production', MASTER_KEY: 'ab'.repeat(32), QUOTE_SIGNING_KEY: 'unused', TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(code, 1, stderr);
    assert.match(stderr, /^api: refusing to start in production without PUBLIC_BASE_URL/);
    assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
  });
});

