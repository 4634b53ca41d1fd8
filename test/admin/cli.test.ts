import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PartnerClient } from '../../src/client/partner-client';
import { getStack, ownTemporal } from '../helpers/stack';

const run = promisify(execFile);

async function admin(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const s = getStack();
  return run(process.execPath, [path.join(s.config.projectRoot, 'dist/src/admin/cli.js'), ...args], {
    env: { ...process.env, DATABASE_URL: s.databaseUrl, MASTER_KEY: s.masterKey.toString('hex') },
  });
}

describe("operators' command line", () => {
  ownTemporal();
  const name = `cli-partner-${process.pid}`;

  it('credential create --json makes the partner if needed and prints a working key id and secret', async () => {
    const { stdout } = await admin('credential', 'create', '--partner', name, '--env', 'sandbox', '--scopes', 'search,buy,embed,broker,refer,report,webhook', '--json');
    const out = JSON.parse(stdout) as { key_id: string; secret: string; environment: string; scopes: string[] };
    assert.match(out.key_id, /^pk_test_/);
    assert.match(out.secret, /^sk_test_/);
    assert.equal(out.environment, 'sandbox');
    assert.deepEqual(out.scopes, ['search', 'buy', 'embed', 'broker', 'refer', 'report', 'webhook']);
    const client = new PartnerClient(getStack().baseUrl, { keyId: out.key_id, secret: out.secret });
    assert.equal((await client.get('/api/partner/v1/pricing?domain=academy.com')).status, 200);

    const stored = (await getStack().dataSource.query('SELECT secret_sealed FROM credentials WHERE key_id = $1', [out.key_id])) as Array<{ secret_sealed: Buffer }>;
    assert.ok(!stored[0].secret_sealed.toString('latin1').includes(out.secret), 'the secret is not stored in clear');

    const list = JSON.parse((await admin('credential', 'list', '--partner', name, '--json')).stdout) as Array<{ key_id: string; revoked_at: string | null }>;
    assert.ok(list.some((c) => c.key_id === out.key_id && c.revoked_at === null));
    assert.ok(!JSON.stringify(list).includes(out.secret), 'list never shows secrets');

    const limited = JSON.parse((await admin('credential', 'rate-limit', out.key_id, '1', '--json')).stdout) as { rate_limit_per_second: number };
    assert.equal(limited.rate_limit_per_second, 1);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await client.get('/api/partner/v1/pricing?domain=academy.com')).status);
    assert.deepEqual(statuses.slice(-1), [429], "the operator's limit applies at once");
    const restored = JSON.parse((await admin('credential', 'rate-limit', out.key_id, 'default', '--json')).stdout) as { rate_limit_per_second: number | null };
    assert.equal(restored.rate_limit_per_second, null);

    const revoked = JSON.parse((await admin('credential', 'revoke', out.key_id, '--json')).stdout) as { revoked_at: string };
    assert.ok(revoked.revoked_at);
    assert.equal((await client.get('/api/partner/v1/pricing?domain=academy.com')).status, 401);
  });

  it('partner create records commission rates, merchant-of-record flag and affiliate account', async () => {
    const { stdout } = await admin('partner', 'create', '--name', `${name}-terms`, '--not-merchant-of-record', '--service-collected-bps', '1200', '--referral-bps', '700', '--affiliate-account', `aff-${process.pid}`, '--json');
    const out = JSON.parse(stdout) as { merchant_of_record: boolean; commission_bps: Record<string, number>; affiliate_account: string };
    assert.equal(out.merchant_of_record, false);
    assert.deepEqual(out.commission_bps, { partner_collected: 1500, service_collected: 1200, brokerage: 1000, referral: 700 });
    assert.equal(out.affiliate_account, `aff-${process.pid}`);

    const updated = JSON.parse((await admin('partner', 'update', '--name', `${name}-terms`, '--merchant-of-record', '--partner-collected-bps', '2000', '--affiliate-account', 'none', '--json')).stdout) as typeof out;
    assert.equal(updated.merchant_of_record, true);
    assert.deepEqual(updated.commission_bps, { partner_collected: 2000, service_collected: 1200, brokerage: 1000, referral: 700 });
    assert.equal(updated.affiliate_account, null);
    const listed = JSON.parse((await admin('partner', 'list', '--json')).stdout) as Array<typeof out & { name: string }>;
    assert.deepEqual(listed.find((p) => p.name === `${name}-terms`)?.commission_bps, updated.commission_bps);
    await assert.rejects(admin('partner', 'update', '--name', 'no-such-partner', '--json'), /no partner named/);
  });

  it('bad arguments are refused with a message and a non-zero exit', async () => {
    await assert.rejects(admin('credential', 'create', '--partner', name, '--env', 'staging', '--scopes', 'search', '--json'), /sandbox or live/);
    await assert.rejects(admin('credential', 'create', '--partner', name, '--env', 'live', '--scopes', 'search,fly', '--json'), /unknown scope/);
    await assert.rejects(admin('credential', 'create', '--partner', name, '--env', 'sandbox', '--scopes', ' , ', '--json'), /at least one scope/);
    await assert.rejects(admin('partner', 'create', '--name', '  ', '--json'), /1 to 200 printable characters/);
    await assert.rejects(admin('credential', 'create', '--partner', '', '--env', 'sandbox', '--scopes', 'search', '--json'), /1 to 200 printable characters/);
    const partners = JSON.parse((await admin('partner', 'list', '--json')).stdout) as Array<{ name: string }>;
    assert.ok(!partners.some((p) => !p.name.trim()), 'no nameless partner was made');
  });

  it('inventory import loads a CSV into the chosen environment, all or nothing', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'inventory-'));
    const good = path.join(dir, 'good.csv');
    writeFileSync(good, 'name,tld,category,buy_now_price_cents,floor_price_cents,currency,status,active_site,registered_year\nclitestname.io,io,technology,100000,50000,USD,listed,false,2020\n');
    const summary = JSON.parse((await admin('inventory', 'import', '--env', 'live', '--file', good, '--json')).stdout) as { rows: number; inserted: number };
    assert.deepEqual(summary, { environment: 'live', rows: 1, inserted: 1, updated: 0 });

    const bad = path.join(dir, 'bad.csv');
    writeFileSync(bad, 'name,tld,category,buy_now_price_cents,floor_price_cents,currency,status,active_site,registered_year\nclitestname2.io,io,technology,100000,50000,USD,listed,false,2020\nnot a name,io,technology,-5,0,USD,listed,false,2020\n');
    await assert.rejects(admin('inventory', 'import', '--env', 'live', '--file', bad, '--json'), /line 3/);
    const rows = (await getStack().dataSource.query("SELECT 1 FROM domains WHERE name = 'clitestname2.io'")) as unknown[];
    assert.equal(rows.length, 0, 'nothing of a rejected file is imported');
  });
});
