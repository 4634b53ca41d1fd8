/**
 * The real parts, booted once for the whole mocha run: an embedded Postgres in a fresh
 * directory (or TEST_DATABASE_URL), migrations, the sandbox inventory, the workflow bundle, the
 * search process (a child process on a Unix socket, as npm start runs it), and the API listening
 * on a real port. Temporal is each test file's own (ownTemporal): a time-skipping server, a
 * worker and a task queue per file, so time one file skips moves only its own workflows, and a
 * workflow a file leaves running stalls no other file's clock.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../activities';
import { QuoteTokenSigner } from '../../src/orders/quote-token';
import type { DataSource } from 'typeorm';
import type { WorkflowStarter } from '../../src/temporal/start';
import { workflowStarters } from '../../src/temporal/starters';
import type Koa from 'koa';
import { createApp, type AppDeps } from '../../src/api/app';
import { CredentialService } from '../../src/auth/credentials';
import { SecretBox } from '../../src/auth/secret-box';
import type { Scope } from '../../src/auth/scopes';
import { SCOPES } from '../../src/auth/scopes';
import { loadConfig, type Config, type Environment } from '../../src/config';
import { openDatabase } from '../../src/db/data-source';
import { startEmbeddedPostgres, type RunningPostgres } from '../../src/db/embedded-postgres';
import { importSandboxInventory } from '../../src/discovery/inventory';
import { ensureModelFiles, MODEL_ID } from '../../src/search/model-files';
import { SearchClient } from '../../src/search/search-client';
import { startSearchProcess, type SearchProcess } from '../../src/search/search-process';
import { startLocalOpenSearch } from '../../src/search/opensearch/local-node';
import { findOrCreatePartner } from '../../src/partners/partners';
import { listenOnLoopback } from '../../src/main/loopback';
import { createApiServer } from '../../src/api/http-server';
import { freePort } from '../../src/main/child-process';
import { temporalReadiness } from '../../src/main/services';
import { ensureMailpit, ensureTestServer, machineToolCache, writeWhole } from '../../src/temporal/tools';
import { startMailpit } from '../../src/mail/mailpit';
import { smtpTransport } from '../../src/mail/send';
import type { Transporter } from 'nodemailer';
import { freshPrebuiltBundle, installTemporalRuntime, serviceWorkflowBundle } from '../../src/temporal/worker';
import { recordAnswer, recordingExamples } from './examples';
import { serviceClientInterceptors, serviceWorkerInterceptors } from '../../src/temporal/request-context';
import { registerSearchAttributes } from '../../src/temporal/search-attributes';
import { PartnerClient } from '../../src/client/partner-client';
import { createLogger } from '../../src/logger';

export interface Stack {
  /** The task queue the suite's API starts workflows on: the calling file's (ownTemporal). */
  readonly taskQueue: string;
  config: Config;
  databaseUrl: string;
  dataSource: DataSource;
  masterKey: Buffer;
  credentials: CredentialService;
  /** The calling file's time-skipping server (ownTemporal). */
  readonly env: TestWorkflowEnvironment;
  /** The time-skipping server's launcher (src/temporal/tools.ts). */
  testServer: string;
  /** The workflow bundle `pretest` built (dist/workflow-bundle.js), or one made here when that is missing or stale. */
  workflowBundle: { code: string };
  baseUrl: string;
  /** Everything the API wrote to its log during the run (one JSON object per line). */
  logLines: string[];
  /** The search process the API calls, and what it wrote. */
  searchProcess: SearchProcess;
  searchLines: string[];
  appDeps: AppDeps;
  /** The suite's Mailpit (absent without Go to build it): its SMTP, its inbox and API, and a transport to it. */
  mail?: { smtpUrl: string; inboxUrl: string; transport: Transporter };
}

let stack: Stack | undefined;
let current: { env: TestWorkflowEnvironment; taskQueue: string } | undefined;
const cleanups: Array<() => Promise<void>> = [];

export function getStack(): Stack {
  if (!stack) throw new Error('the test stack is not up (is test/helpers/hooks loaded?)');
  return stack;
}

function fileTemporal(): { env: TestWorkflowEnvironment; taskQueue: string } {
  if (!current) throw new Error('this test file has no Temporal: call ownTemporal() first in its top describe');
  return current;
}

/** What the suite's API starts workflows with: the current file's server and task queue. */
const fileWorkflows: WorkflowStarter = {
  get client() {
    return fileTemporal().env.client;
  },
  get taskQueue() {
    return fileTemporal().taskQueue;
  },
};

/**
 * Gives the calling test file (call it first in its top describe) a time-skipping server of its
 * own, and a worker on a task queue of its own running (worker.runUntil) until the file's last
 * hook; the suite's API starts its workflows there meanwhile. The server goes with the file, and
 * with it every workflow the file left running.
 */
export function ownTemporal(): void {
  let finish: () => void = () => undefined;
  let running: Promise<void> | undefined;
  let env: TestWorkflowEnvironment | undefined;
  before(async function () {
    this.timeout(60_000);
    env = await takeTimeSkippingServer();
    const taskQueue = `partner-api-test-${randomBytes(4).toString('hex')}`;
    const worker = await suiteWorker(taskQueue, { workflows: { client: env.client, taskQueue } }, env);
    running = worker.runUntil(new Promise<void>((resolve) => (finish = resolve)));
    // A worker that fails fails the file's next hook, not the process.
    running.catch(() => undefined);
    current = { env, taskQueue };
  });
  after(async function () {
    this.timeout(60_000);
    current = undefined;
    finish();
    try {
      await running;
    } finally {
      await env?.teardown();
    }
  });
}

/** A time-skipping server started ahead for the next file that asks (takeTimeSkippingServer). */
let spareServer: Promise<TestWorkflowEnvironment> | undefined;

/**
 * The SDK waits a fixed 5 s for the test server's JVM to listen, and a JVM starting while three
 * lanes keep both cores busy once took longer (2026-12-02). The wait cannot be set, so a start
 * that ran out of it is made again, up to three times in all: a slow start, not a test, is what
 * is given another go.
 */
async function startTimeSkippingServer(): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      const env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: getStack().testServer } }, client: { interceptors: serviceClientInterceptors() } });
      await registerSearchAttributes(env.connection, 'default');
      return env;
    } catch (err) {
      if (attempt >= 3 || !/did not start within/.test((err as Error).message)) throw err;
      process.stderr.write(`      (the time-skipping server's JVM did not listen within the SDK's 5 s; starting it again, attempt ${attempt + 1})\n`);
    }
  }
}

/**
 * A fresh time-skipping server for a file: the one started ahead while the previous file ran
 * (its JVM's start, about a second, is then no file's wait), and the next one started ahead.
 * A spare's clock is its own from its start, like any fresh server's.
 */
function takeTimeSkippingServer(): Promise<TestWorkflowEnvironment> {
  const taken = spareServer ?? startTimeSkippingServer();
  spareServer = startTimeSkippingServer();
  // A spare that failed to start is found by the file that takes it.
  spareServer.catch(() => undefined);
  return taken;
}

/** Starts an HTTP server for a Koa app on a free port; closed after the run. */
export async function listen(app: Koa<any>): Promise<string> {
  let origin = 'http://127.0.0.1';
  // The API's own server (src/api/http-server.ts): what Node's parser refuses is answered as in production.
  const server = createApiServer(app.callback(), () => origin);
  const { url } = await listenOnLoopback(server);
  origin = url;
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return url;
}

export async function bootStack(): Promise<Stack> {
  const started = Date.now();
  // Webhook tests receive on 127.0.0.1 (test/helpers/receiver.ts), as a developer does with npm start.
  // Every test's browser and client come from 127.0.0.1: the suite's own app has no page limits
  // to speak of; test/pages/limits.test.ts runs an app with the real ones.
  const unlimited = Object.fromEntries(['PAGE_LIMIT_PER_MINUTE', 'PAGE_LIMIT_BURST', 'CLICK_LIMIT_PER_MINUTE', 'DECLINE_LIMIT_PER_HOUR', 'BUY_NOW_LIMIT_PER_HOUR', 'APPLY_LIMIT_PER_HOUR'].map((k) => [k, '1000000']));
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'info', WEBHOOK_ALLOW_LOOPBACK: 'true', ...unlimited });
  const masterKey = randomBytes(32);

  let postgres: RunningPostgres;
  let pgDir: string | undefined;
  if (process.env.TEST_DATABASE_URL) {
    postgres = { url: process.env.TEST_DATABASE_URL, stop: async () => undefined };
  } else {
    pgDir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-test-pg-'));
    postgres = await startEmbeddedPostgres(pgDir, await freePort());
  }
  cleanups.push(async () => {
    await postgres.stop();
    if (pgDir) rmSync(pgDir, { recursive: true, force: true });
  });
  const dataSource = await openDatabase(postgres.url);
  cleanups.push(() => dataSource.destroy());
  await importSandboxInventory(dataSource, config.projectRoot);

  installTemporalRuntime('error');
  const testServer = await ensureTestServer(config.toolCacheDir);
  const prebuilt = freshPrebuiltBundle();
  const workflowBundle = prebuilt ? { code: readFileSync(prebuilt, 'utf8') } : await serviceWorkflowBundle(quietBundlerLogger);
  const quoteSigner = QuoteTokenSigner.fromPem(QuoteTokenSigner.generatePem());
  // The search process, with its data directory (embeddings) in the tool cache so that only the
  // first run on a machine embeds the inventory, and its socket in a fresh directory.
  await ensureModelFiles(config.toolCacheDir);
  const sandboxLog = path.join(testSearchDataDir(config), 'embeddings', `sandbox-${MODEL_ID}.log`);
  const machineLog = path.join(machineToolCache(), 'test-search-data', `sandbox-${MODEL_ID}.log`);
  // A fresh clone's lane starts with this machine's embeddings of the sandbox inventory, if an
  // earlier run left them (each lane would otherwise spend half a minute embedding it again).
  if (!existsSync(sandboxLog) && existsSync(machineLog)) {
    mkdirSync(path.dirname(sandboxLog), { recursive: true });
    copyFileSync(machineLog, sandboxLog);
  }
  const searchLines: string[] = [];
  const socketDir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-search-'));
  const searchProcess = await startSearchProcess({
    env: searchProcessEnv(config, postgres.url, `unix:${path.join(socketDir, 'search.sock')}`, testSearchDataDir(config)),
    output: (line) => searchLines.push(line),
  }).catch((err: Error) => {
    process.stderr.write(searchLines.join('\n') + '\n');
    throw err;
  });
  // Kept for this machine's next fresh clone (the first lane to get here writes it whole, then renames).
  if (existsSync(sandboxLog) && !existsSync(machineLog)) {
    try {
      mkdirSync(path.dirname(machineLog), { recursive: true });
      writeWhole(machineLog, (partial) => copyFileSync(sandboxLog, partial));
    } catch {
      // Only a cache: the next fresh clone embeds the inventory again.
    }
  }
  cleanups.push(async () => {
    await searchProcess.stop();
    rmSync(socketDir, { recursive: true, force: true });
  });
  const search = new SearchClient(searchProcess.url);
  cleanups.push(async () => search.close());

  // The suite's mail server: every worker sends through it, tests read it (test/helpers/mailpit.ts).
  const mailpitBinary = await ensureMailpit(config.toolCacheDir);
  let mail: Stack['mail'];
  if (mailpitBinary) {
    const mailpit = await startMailpit(mailpitBinary, { smtpPort: await freePort(), uiPort: await freePort() });
    cleanups.push(() => mailpit.stop());
    mail = { smtpUrl: mailpit.smtpUrl, inboxUrl: mailpit.inboxUrl, transport: smtpTransport(mailpit.smtpUrl) };
  }

  const logLines: string[] = [];
  const credentials = new CredentialService(dataSource, new SecretBox(masterKey), 0);
  const appDeps: AppDeps = {
    config,
    dataSource,
    credentials,
    secretBox: new SecretBox(masterKey),
    search,
    workflows: fileWorkflows,
    quoteSigner,
    logger: createLogger('info', { write: (line: string) => { logLines.push(line); if (line.includes('"level":50')) process.stderr.write(line); } }),
    temporalReady: async () => temporalReadiness(fileTemporal().env.connection)(),
    // EXAMPLES_WRITE=1: the reference's examples are recorded from these answers (src/api/examples.ts).
    ...(recordingExamples ? { onAnswer: recordAnswer } : {}),
  };
  const baseUrl = await listen(createApp(appDeps));
  stack = {
    get taskQueue() {
      return fileTemporal().taskQueue;
    },
    get env() {
      return fileTemporal().env;
    },
    testServer,
    config,
    databaseUrl: postgres.url,
    dataSource,
    masterKey,
    credentials,
    workflowBundle,
    baseUrl,
    logLines,
    searchProcess,
    searchLines,
    appDeps,
    mail,
  };
  process.stderr.write(`      (test stack up in ${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  return stack;
}

/**
 * A worker of its own for a test file: the suite's workflow bundle and the real activities (over
 * the suite's database), on `taskQueue` of `env` (the calling file's time-skipping server unless given).
 */
export async function suiteWorker(
  taskQueue: string,
  { workflows, ...deps }: Partial<ActivityDeps> & { workflows?: WorkflowStarter } = {},
  env: TestWorkflowEnvironment = getStack().env,
): Promise<Worker> {
  const s = getStack();
  return Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: s.workflowBundle,
    // A workflow's activity that ignores cancellation does not hold a test file's end for long.
    shutdownForceTime: '10 seconds',
    ...serviceWorkerInterceptors(),
    activities: createActivities({
      dataSource: s.dataSource,
      masterKey: s.masterKey,
      allowLoopbackWebhooks: true,
      ...(s.mail ? { mail: { transport: s.mail.transport, from: 'Domain Marketplace <no-reply@marketplace.test>', publicBaseUrl: s.baseUrl } } : {}),
      ...(workflows ? { starters: workflowStarters(workflows, s.dataSource) } : {}), ...deps }),
  });
}

/**
 * A database of its own on the suite's Postgres server, migrated and empty, for a test whose
 * tens of thousands of names must not reach the stack's search processes (each would embed or
 * index them all in the background, slowing every file after it). Dropped with `drop()`.
 */
export async function scratchDatabase(prefix = 'scratch'): Promise<{ url: string; dataSource: DataSource; drop: () => Promise<void> }> {
  const { url, drop } = await emptyDatabase(prefix);
  const dataSource = await openDatabase(url);
  return {
    url,
    dataSource,
    drop: async () => {
      await dataSource.destroy();
      await drop();
    },
  };
}

/** A database of its own on the suite's Postgres server with no schema at all (the caller migrates it as it needs); dropped with `drop()`. */
export async function emptyDatabase(prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const s = getStack();
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  // Raw SQL: creating and dropping a database is the server's, not an entity's.
  await s.dataSource.query(`CREATE DATABASE ${name}`);
  const url = new URL(s.databaseUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => s.dataSource.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined) };
}

/**
 * The data directory (embeddings) of the suite's search processes, in the tool cache so that only
 * the first run on a machine embeds the inventory: one for each lane of test/lanes.ts (TEST_LANE),
 * since two processes appending to one embedding log at once could tear its records.
 */
export function testSearchDataDir(config: Config): string {
  const lane = Number(process.env.TEST_LANE ?? 0);
  return path.join(config.toolCacheDir, lane > 0 ? `test-search-data-lane${lane}` : 'test-search-data');
}

/** The environment of a search process for the tests: this database, this socket, that data directory, quiet logs. */
export function searchProcessEnv(config: Config, databaseUrl: string, searchUrl: string, dataDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, DATABASE_URL: databaseUrl, SEARCH_URL: searchUrl, DATA_DIR: dataDir, TOOL_CACHE_DIR: config.toolCacheDir, LOG_LEVEL: 'warn', ...extra };
}

export async function teardownStack(): Promise<void> {
  const spare = spareServer;
  spareServer = undefined;
  await spare?.then((env) => env.teardown()).catch(() => undefined);
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch (err) {
      process.stderr.write(`teardown: ${(err as Error).message}\n`);
    }
  }
  stack = undefined;
  openSearch = undefined;
}

export const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (m: string) => process.stderr.write(`bundler: ${m}\n`),
  error: (m: string) => process.stderr.write(`bundler: ${m}\n`),
};

let partnerCounter = 0;

/** A fresh partner with one credential, and a signed client for it. */
export async function newPartner(
  options: { environment?: Environment; scopes?: Scope[]; rateLimitPerSecond?: number | null; baseUrl?: string; name?: string } = {},
): Promise<{ client: PartnerClient; keyId: string; secret: string; partnerId: string }> {
  const s = getStack();
  const name = options.name ?? `test-partner-${process.pid}-${++partnerCounter}-${randomBytes(3).toString('hex')}`;
  const { partner } = await findOrCreatePartner(s.dataSource, name);
  const issued = await s.credentials.issue({
    partnerId: partner.id,
    environment: options.environment ?? 'sandbox',
    scopes: options.scopes ?? [...SCOPES],
    rateLimitPerSecond: options.rateLimitPerSecond === undefined ? 1000 : options.rateLimitPerSecond,
  });
  return {
    client: new PartnerClient(options.baseUrl ?? s.baseUrl, { keyId: issued.keyId, secret: issued.secret }),
    keyId: issued.keyId,
    secret: issued.secret,
    partnerId: partner.id,
  };
}

let openSearch: Promise<{ client: SearchClient; url: string; lines: string[] }> | undefined;

/**
 * The OpenSearch engine for the search tests (issue: the search tests run against both engines):
 * a local OpenSearch node (src/search/opensearch/local-node.ts) with a fresh data directory, and
 * a second search process with SEARCH_ENGINE=opensearch over it, reading the stack's database
 * (its log, at info, in `lines`).
 * Started on first use, once for the suite; stopped with the stack.
 */
export function openSearchEngine(): Promise<{ client: SearchClient; url: string; lines: string[] }> {
  openSearch ??= (async () => {
    const { config, databaseUrl } = getStack();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-opensearch-'));
    const node = await startLocalOpenSearch({ cacheDir: config.toolCacheDir, dataDir: dir });
    cleanups.push(async () => {
      await node.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const lines: string[] = [];
    const searchProcess = await startSearchProcess({
      env: searchProcessEnv(config, databaseUrl, `unix:${path.join(dir, 'search.sock')}`, testSearchDataDir(config), { SEARCH_ENGINE: 'opensearch', OPENSEARCH_URL: node.url, LOG_LEVEL: 'info' }),
      output: (line) => lines.push(line),
    }).catch((err: Error) => {
      process.stderr.write(lines.join('\n') + '\n');
      throw err;
    });
    cleanups.push(() => searchProcess.stop());
    return { client: searchProcess.client, url: node.url, lines };
  })();
  return openSearch;
}

/**
 * What holds a file's time-skipping server: its clock, and each open workflow with its pending
 * activities (a running activity stops the clock from skipping). Printed when a test's wait on
 * time runs out, so a hang says why.
 */
export async function openWorkflowsReport(env: TestWorkflowEnvironment): Promise<string> {
  const service = env.client.workflowService;
  // Locked, the server's clock moves with the wall clock; free to skip, it jumps timer to timer.
  // A measured stretch of wall time, not a wait for a state.
  const wallMs = 2000;
  const before = await env.currentTimeMs();
  await new Promise((resolve) => setTimeout(resolve, wallMs));
  const after = await env.currentTimeMs();
  const lines = [`server clock: ${new Date(after).toISOString()}, moved ${after - before} ms in ${wallMs / 1000} s of wall time`];
  const open = await service.listOpenWorkflowExecutions({ namespace: 'default', maximumPageSize: 100 });
  for (const e of open.executions ?? []) {
    const execution = { workflowId: e.execution?.workflowId ?? '', runId: e.execution?.runId ?? '' };
    const d = await service.describeWorkflowExecution({ namespace: 'default', execution });
    lines.push(`open: ${e.type?.name} ${execution.workflowId} (history ${d.workflowExecutionInfo?.historyLength ?? '?'} events)`);
    // A workflow task scheduled or started and not completed keeps the test server from skipping time.
    const task = d.pendingWorkflowTask;
    if (task) lines.push(`  workflow task state=${task.state} attempt=${task.attempt} scheduled=${task.scheduledTime ? new Date(Number(task.scheduledTime.seconds) * 1000).toISOString() : '-'}`);
    for (const a of d.pendingActivities ?? []) {
      lines.push(`  activity ${a.activityType?.name} state=${a.state} attempt=${a.attempt} last failure: ${a.lastFailure?.message ?? '-'}`);
    }
  }
  return lines.join('\n');
}
