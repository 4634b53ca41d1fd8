import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { createApp } from '../../src/api/app';
import { dependencyUnavailable } from '../../src/api/unavailable';
import { CredentialService } from '../../src/auth/credentials';
import { SecretBox } from '../../src/auth/secret-box';
import { PartnerClient } from '../../src/client/partner-client';
import { openDatabase } from '../../src/db/data-source';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';
import { Quote } from '../../src/db/entities/quote';
import { importSandboxInventory } from '../../src/discovery/inventory';
import { API_TEMPORAL_CALL_ATTEMPTS } from '../../src/main/services';
import { Supervisor, type PartRun } from '../../src/main/supervise';
import { freePort } from '../../src/main/child-process';
import { findOrCreatePartner } from '../../src/partners/partners';
import { configuredStarter } from '../../src/temporal/start';
import { freshDomain } from '../helpers/orders';
import { getStack, listen, newPartner } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

/** A child that runs until killed (a part, as far as the supervisor can tell). */
function sleeper(): PartRun & { pid: number } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `code ${code}`)));
  return {
    pid: child.pid!,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

const code = (body: unknown) => (body as { error?: { code: string } }).error?.code;

describe('npm start supervises its parts; a part down is 503, never 500 (issue: nothing lost when any part dies, part 1)', () => {
  it('a part that dies is started again with back-off and a log line; a start that fails is tried again; once halted, nothing starts', async () => {
    const lines: string[] = [];
    let starts = 0;
    let current: ReturnType<typeof sleeper> | undefined;
    const maxBackoffMs = 400;
    const supervisor = new Supervisor(
      'the sleeper',
      async () => {
        starts++;
        if (starts === 3) throw new Error('its dependency is still down');
        current = sleeper();
        return { ...current, detail: `pid ${current.pid}` };
      },
      { log: (m) => lines.push(m), firstBackoffMs: 50, maxBackoffMs },
    );
    await supervisor.run();
    const first = current!.pid;
    process.kill(first, 'SIGKILL');
    await waitFor(() => supervisor.restarts, (n) => n >= 1, 5_000, 'a first restart');
    assert.equal(supervisor.restarts, 1);
    assert.notEqual(current!.pid, first);
    process.kill(current!.pid, 'SIGKILL'); // the next start fails once, then succeeds
    await waitFor(() => supervisor.restarts, (n) => n >= 2, 5_000, 'a second restart');
    assert.equal(supervisor.restarts, 2);
    assert.equal(starts, 4);
    assert.ok(lines.some((l) => /the sleeper exited \(signal SIGKILL\): starting it again in 0\.1 s/.test(l)), lines.join('\n'));
    assert.ok(lines.some((l) => /did not start again \(its dependency is still down\)/.test(l)), lines.join('\n'));
    assert.ok(lines.some((l) => /the sleeper is back \(pid \d+\)/.test(l)));
    supervisor.halt();
    const last = current!;
    await last.stop(); // as Ctrl-C reaching the child would
    // A deliberate pause to show that nothing happens: twice the longest back-off, after which a
    // supervisor that went on would have started the part again (the back-off is at its longest by now).
    const pastTheNextStartMs = 2 * maxBackoffMs;
    await new Promise((r) => setTimeout(r, pastTheNextStartMs));
    assert.equal(starts, 4, 'not started again once halted');
    await supervisor.stop();
  });

  it('Postgres killed with SIGKILL: signed requests answer 503 service_unavailable with Retry-After (never 500) until the supervisor has it back, then 200', async function () {
    this.timeout(120_000);
    const s = getStack();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-pg-'));
    const postgres = await startEmbeddedPostgres(path.join(dir, 'data'), await freePort());
    const lines: string[] = [];
    let first = true;
    const proc = postgres.process!;
    const supervisor = new Supervisor(
      'Postgres',
      async () => {
        if (!first) await proc.restart();
        first = false;
        return { exited: proc.exited(), stop: () => postgres.stop(), detail: `pid ${proc.pid}` };
      },
      { log: (m) => lines.push(m) },
    );
    await supervisor.run();
    const dataSource = await openDatabase(postgres.url, { poolSize: 4 });
    try {
      await importSandboxInventory(dataSource, s.config.projectRoot);
      const credentials = new CredentialService(dataSource, new SecretBox(s.masterKey), 0);
      const { partner } = await findOrCreatePartner(dataSource, 'supervised-postgres');
      const issued = await credentials.issue({ partnerId: partner.id, environment: 'sandbox', scopes: ['search'] });
      const url = await listen(createApp({ ...s.appDeps, dataSource, credentials }));
      const client = new PartnerClient(url, { keyId: issued.keyId, secret: issued.secret });
      const path_ = '/api/partner/v1/availability?domain=academy.com';
      assert.equal((await client.get(path_)).status, 200);

      const pid = proc.pid!;
      process.kill(pid, 'SIGKILL');
      const seen = new Map<number, number>();
      // Each answer while it is down is checked; the last value read, should it never come back,
      // holds the answers seen and the supervisor's lines.
      const answer = async () => {
        const res = await client.get(path_);
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        // 401 only as designed: a request signed in the second the replay store came back empty (CONTRACT §1; the client signs again).
        const signedBeforeRestart = res.status === 401 && /restarted/.test(JSON.stringify(res.body));
        assert.ok(res.status === 200 || res.status === 503 || signedBeforeRestart, `answered ${res.status}: ${JSON.stringify(res.body)}`);
        if (res.status === 503) {
          assert.equal(code(res.body), 'service_unavailable');
          assert.ok(Number(res.headers.get('retry-after')) >= 1);
        }
        return { status: res.status, restarts: supervisor.restarts, seen: JSON.stringify([...seen]), lines: lines.join(' | ') };
      };
      await waitFor(answer, (a) => a.status === 200 && a.restarts >= 1, 60_000, 'Postgres back and requests served again');
      assert.ok((seen.get(503) ?? 0) >= 1, 'answered 503 while it was down');
      assert.ok(lines.some((l) => /Postgres exited \(signal SIGKILL\): starting it again/.test(l)), lines.join('\n'));
      assert.notEqual(proc.pid, pid);
    } finally {
      await dataSource.destroy();
      await supervisor.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the Temporal server unreachable: a quote answers 503 within a second or so and leaves no quote behind', async () => {
    const s = getStack();
    // Nothing listens on port 1: every call fails UNAVAILABLE, as while the server restarts.
    const connection = Connection.lazy({ address: '127.0.0.1:1', interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: API_TEMPORAL_CALL_ATTEMPTS }))] });
    const url = await listen(createApp({ ...s.appDeps, workflows: configuredStarter(new Client({ connection }), s.config.temporal) }));
    const { keyId, secret } = await newPartner();
    const domain = await freshDomain();
    const started = Date.now();
    const res = await new PartnerClient(url, { keyId, secret }).post('/api/partner/v1/quotes', { domain: domain.name });
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(code(res.body), 'service_unavailable');
    assert.ok(res.headers.get('retry-after'));
    console.log(`      (answered 503 after ${Date.now() - started} ms)`);
    const active = await s.dataSource.getRepository(Quote).countBy({ domain: domain.name, status: 'active' });
    assert.equal(active, 0, 'no quote holds the name');
    await connection.close();
  });

  it('recognises what a part down looks like, and nothing else', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    assert.ok(dependencyUnavailable(refused));
    assert.ok(dependencyUnavailable({ name: 'QueryFailedError', driverError: { code: '57P01' } }), 'admin shutdown');
    assert.ok(dependencyUnavailable(new Error('Connection terminated unexpectedly')));
    assert.ok(dependencyUnavailable(Object.assign(new Error('temporal'), { cause: { code: 14, details: 'No connection established' } })));
    assert.ok(dependencyUnavailable(Object.assign(new Error("Namespace not found: 'default'"), { name: 'NamespaceNotFoundError' })), 'a Temporal frontend starting');
    assert.ok(!dependencyUnavailable({ name: 'QueryFailedError', code: '23505', driverError: { code: '23505' } }), 'a unique violation is a bug or a race, not an outage');
    assert.ok(!dependencyUnavailable(new TypeError("Cannot read properties of undefined (reading 'x')")));
  });

  it('a transaction whose Postgres connection dies half-way fails as a part down, whichever of its queries meets it (a chaos run met QueryRunnerAlreadyReleasedError: a 500)', async () => {
    const { dataSource } = getStack();
    const errors: unknown[] = [];
    await dataSource
      .transaction(async (manager) => {
        const [{ pid }] = (await manager.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;
        // Raw SQL: ending one backend is what a Postgres that dies does to its connections.
        await dataSource.query('SELECT pg_terminate_backend($1)', [pid]);
        // Until the client has heard its connection die: TypeORM then releases the transaction's query runner.
        await waitFor(() => manager.queryRunner!.isReleased, (released) => released, 5_000, "the transaction's query runner released after its connection died");
        for (let i = 0; i < 3; i++) {
          try {
            await manager.query('SELECT 1');
          } catch (err) {
            errors.push(err);
          }
        }
      })
      .catch((err: unknown) => errors.push(err));
    assert.ok(errors.length >= 1, 'the transaction failed');
    for (const err of errors) assert.ok(dependencyUnavailable(err), `${(err as Error).name}: ${(err as Error).message}`);
    assert.ok(errors.some((e) => /AlreadyReleased/.test((e as Error).name)), errors.map((e) => (e as Error).name).join(', '));
  });
});
