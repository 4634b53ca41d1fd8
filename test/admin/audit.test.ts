import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { adminWith } from '../helpers/admin';
import { outcomeOf } from '../../src/admin/audit';

/** Every manual act through the admin CLI is recorded with the operator who made it; reads are not. */
describe('admin audit: which operator did each manual act', () => {
  // These commands need no Temporal (this file runs none).
  const as = (operator: string, ...args: string[]) => adminWith({ TEMPORAL_ADDRESS: '127.0.0.1:1', ADMIN_OPERATOR: operator }, ...args);

  it('records each change with its operator, command, arguments and outcome (a refusal with its reason); not a read', async () => {
    const name = `audited-${randomUUID().slice(0, 8)}`;
    const created = await as('alice', 'partner', 'create', '--name', name, '--referral-bps', '700', '--json');
    assert.equal(created.code, 0, created.stderr);
    const quota = await as('bob', 'partner', 'quota', '--partner', name, '--env', 'sandbox', '--active-quotes', '250', '--json');
    assert.equal(quota.code, 0, quota.stderr);
    assert.equal((await as('carol', 'partner', 'quota', '--partner', name, '--env', 'sandbox', '--json')).code, 0, 'a read');
    assert.equal((await as('carol', 'partner', 'list', '--json')).code, 0, 'a read');
    assert.notEqual((await as('dave', 'partner', 'create', '--name', name, '--json')).code, 0, 'refused: the name is taken');

    const audit = await as('erin', 'audit', '--limit', '20', '--json');
    assert.equal(audit.code, 0, audit.stderr);
    const acts = (JSON.parse(audit.stdout) as Array<{ operator: string; command: string; arguments: Record<string, unknown>; at: string; outcome: string; error: string | null }>).filter((a) =>
      JSON.stringify(a.arguments).includes(name),
    );
    assert.deepEqual(
      acts.map(({ operator, command, arguments: args, outcome }) => ({ operator, command, args, outcome })),
      [
        { operator: 'dave', command: 'partner create', args: { name }, outcome: 'refused' },
        { operator: 'bob', command: 'partner quota', args: { partner: name, env: 'sandbox', activeQuotes: 250 }, outcome: 'succeeded' },
        { operator: 'alice', command: 'partner create', args: { name, referralBps: 700 }, outcome: 'succeeded' },
      ],
    );
    assert.ok(acts[0].error, 'the refusal says why');
    assert.ok(!Number.isNaN(Date.parse(acts[0].at)));
  });

  it('a command stopped by a part that did not answer is recorded as failed, not refused (Temporal out of reach)', async function () {
    this.timeout(60_000);
    const promoted = await as('frank', 'deploy', 'promote', '--json');
    assert.notEqual(promoted.code, 0);
    const audit = await as('erin', 'audit', '--limit', '20', '--json');
    const act = (JSON.parse(audit.stdout) as Array<{ operator: string; command: string; outcome: string; error: string | null }>).find((a) => a.operator === 'frank');
    assert.ok(act, audit.stdout);
    assert.equal(act.command, 'deploy promote');
    assert.equal(act.outcome, 'failed');
    assert.match(act.error ?? '', /connect/i);
  });

  it('tells a breakdown from a refusal by what was thrown', () => {
    const grpc = (code: number) => Object.assign(new Error('grpc'), { code });
    assert.equal(outcomeOf(new Error('no partner named x')), 'refused');
    assert.equal(outcomeOf(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })), 'failed');
    assert.equal(outcomeOf(grpc(14)), 'failed', 'UNAVAILABLE');
    assert.equal(outcomeOf(grpc(5)), 'refused', 'NOT_FOUND is an answer');
    assert.equal(outcomeOf(Object.assign(new Error('wrapped'), { cause: grpc(4) })), 'failed', 'DEADLINE_EXCEEDED under a wrapper');
    const query = (code: string) => Object.assign(new Error('q'), { name: 'QueryFailedError', driverError: { code } });
    assert.equal(outcomeOf(query('23505')), 'refused', 'a unique name taken: a rule, not a breakdown');
    assert.equal(outcomeOf(query('57P01')), 'failed', 'the server shut down');
    assert.equal(outcomeOf(query('40001')), 'failed', 'a serialization failure');
    assert.equal(outcomeOf(Object.assign(new Error("ENOENT: no such file or directory, open 'names.csv'"), { code: 'ENOENT', syscall: 'open' })), 'refused', 'a file the operator named is missing');
    assert.equal(outcomeOf(new Error('refund timed out', { cause: Object.assign(new Error('x'), { name: 'ApiError', status: 503 }) })), 'failed');
    assert.equal(outcomeOf(new Error('not refundable', { cause: Object.assign(new Error('x'), { name: 'ApiError', status: 409 }) })), 'refused');
    assert.equal(outcomeOf(new Error('Connection terminated unexpectedly')), 'failed');
    assert.equal(outcomeOf(new Error('Failed to connect before the deadline')), 'failed');
  });

  it('in production a change is refused until the operator is named (ADMIN_OPERATOR): in a container the OS user is always node', async () => {
    const name = `unnamed-${randomUUID().slice(0, 8)}`;
    const res = await adminWith({ TEMPORAL_ADDRESS: '127.0.0.1:1', ADMIN_OPERATOR: '', NODE_ENV: 'production', QUOTE_SIGNING_KEY: 'unused' }, 'partner', 'create', '--name', name, '--json');
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /ADMIN_OPERATOR/);
    const list = await adminWith({ TEMPORAL_ADDRESS: '127.0.0.1:1' }, 'partner', 'list', '--json');
    assert.ok(!list.stdout.includes(name), 'nothing was made');
  });
});

