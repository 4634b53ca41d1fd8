/**
 * `npm start`: the whole service on one machine. Postgres (embedded, unless DATABASE_URL),
 * migrations, Redis for admission (when redis-server is installed, unless REDIS_URL), the sandbox inventory, the search process (a child process holding the model and
 * the indexes, on SEARCH_URL; with SEARCH_ENGINE=opensearch and no OPENSEARCH_URL, a local OpenSearch
 * node first, src/search/opensearch/local-node.ts), the Temporal dev server with its UI (unless TEMPORAL_ADDRESS), the
 * worker (a child process) and the API; then a sandbox credential and an example request.
 * Each part it runs (Postgres, Redis, OpenSearch, the Temporal dev server, the search process, the worker) is
 * supervised: when one dies, it is started again with back-off and a log line (src/main/supervise.ts);
 * the API and the worker reconnect meanwhile, and the API answers 503 with Retry-After.
 * Ctrl-C stops everything in order; the next start finds the same data in DATA_DIR. Sandbox webhooks may
 * go to loopback here (loadDevStackConfig), so a receiver on the developer's machine works.
 */
// First: tracing (when configured) must patch http and Koa before they load.
import { activeTracing } from '../telemetry/register-api';
import { ownShutdownSignals } from '../db/embedded-postgres';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { encodeMasterKey, loadDevStackConfig } from '../config';
import { CredentialService } from '../auth/credentials';
import { SecretBox } from '../auth/secret-box';
import { SCOPES } from '../auth/scopes';
import { importSandboxInventory } from '../discovery/inventory';
import { createLogger } from '../logger';
import { findOrCreatePartner } from '../partners/partners';
import { startDevServer, type DevServer } from '../temporal/dev-server';
import { ensureMailpit, ensureTemporalCli } from '../temporal/tools';
import { startMailpit } from '../mail/mailpit';
import { installTemporalRuntime } from '../temporal/worker';
import { configuredVersion } from '../temporal/versioning';
import { openProjectDatabase, resolveMasterKey, resolveQuoteSigner, resolveQuoteSigningPem, say } from './runtime';
import { SearchClient } from '../search/search-client';
import { startSearchProcess } from '../search/search-process';
import { startLocalOpenSearch } from '../search/opensearch/local-node';
import { API_TEMPORAL_CALL_ATTEMPTS, connectTemporal, startApiServer } from './services';
import { forkUntilReady, freePort } from './child-process';
import { Supervisor } from './supervise';
import { metricsRegistry } from '../metrics/metrics';
import { startMetricsServer } from '../metrics/server';
import { findRedisServer, installRedisServer, redisServerUsable, startRedisServer } from './redis-server';

const SANDBOX_PARTNER = 'sandbox-demo';
const WORKER_ENTRY = path.join(__dirname, 'worker.js');

/** What has been started so far, stopped in reverse order on Ctrl-C or on a failed start. */
const stops: Array<[string, () => Promise<void>]> = [];
/** Every supervised part: none is started again once the stack stops. */
const supervisors: Supervisor[] = [];
let failed: (err: unknown) => void = (err) => {
  say(`[start] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
};

async function main(): Promise<void> {
  const config = loadDevStackConfig();
  const logger = createLogger(config.logLevel);
  const step = (m: string) => say(`[start] ${m}`);
  const tracing = activeTracing();
  // Stopped last: the spans of everything else's stop are exported.
  if (tracing) stops.push(['tracing', () => tracing.shutdown()]);
  let stopping = false;
  const shutdown = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    for (const supervisor of supervisors) supervisor.halt();
    step(`${signal}: stopping`);
    for (const [name, stop] of stops.reverse()) {
      try {
        await stop();
        step(`stopped ${name}`);
      } catch (err) {
        step(`stopping ${name} failed: ${(err as Error).message}`);
      }
    }
    process.exit(exitCode);
  };
  failed = (err) => {
    say(`[start] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    void shutdown('start failed', 1);
  };
  ownShutdownSignals();
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  const masterKey = resolveMasterKey(config, step);
  step(config.database.url ? 'using DATABASE_URL' : `embedded Postgres, data in ${path.join(config.dataDir, 'postgres')}`);
  const { dataSource, postgres } = await openProjectDatabase(config, step);
  const supervised = { log: step };
  const supervise = (supervisor: Supervisor) => {
    supervisors.push(supervisor);
    return supervisor;
  };
  const postgresProcess = postgres.process;
  if (postgresProcess) {
    let first = true;
    const supervisor = supervise(new Supervisor(
      'Postgres',
      async () => {
        if (!first) await postgresProcess.restart();
        first = false;
        return { exited: postgresProcess.exited(), stop: () => postgres.stop(), detail: `pid ${postgresProcess.pid}` };
      },
      supervised,
    ));
    await supervisor.run();
    stops.push(['Postgres', () => supervisor.stop()]);
  } else {
    stops.push(['Postgres', () => postgres.stop()]);
  }
  stops.push(['database pool', () => dataSource.destroy()]);
  step('migrations applied');

  if (!config.redis.url) {
    let executable = findRedisServer();
    if (!executable && config.redis.install) {
      step("redis-server is not installed: installing Debian's with apt-get for admission in Redis (REDIS_INSTALL=false skips this)…");
      executable = await installRedisServer(step);
    }
    const usable = executable ? redisServerUsable(executable) : undefined;
    if (executable && usable?.ok) {
      const redisServer = executable;
      let url = '';
      const supervisor = supervise(new Supervisor(
        'Redis',
        async () => {
          const redis = await startRedisServer(redisServer, config.dataDir, step);
          url = redis.url;
          return { exited: redis.exited.then(async (code) => (code === null ? `signal ${(await redis.exitSignal) ?? 'unknown'}` : `code ${code}`)), stop: () => redis.stop(), detail: `pid ${redis.pid}` };
        },
        supervised,
      ));
      await supervisor.run();
      stops.push(['Redis', () => supervisor.stop()]);
      config.redis.url = url;
    } else if (executable) {
      step(usable?.version ? `redis-server ${usable.version} is older than 7.0: admission in Postgres` : `${executable} --version did not answer: admission in Postgres`);
    } else {
      step('redis-server is not installed: admission in Postgres (apt-get install redis-server for the faster path; bench/RESULTS.md)');
    }
  } else {
    step('using REDIS_URL for admission');
  }

  // Email without SMTP_URL: a local Mailpit (SMTP and a web inbox), supervised like the others.
  let mailInbox: string | undefined;
  if (!config.mail.smtpUrl) {
    const binary = await ensureMailpit(config.toolCacheDir);
    if (binary) {
      const supervisor = supervise(new Supervisor(
        'Mailpit',
        async () => {
          const mailpit = await startMailpit(binary, { ...config.mail.mailpit, database: path.join(config.dataDir, 'mailpit.db') });
          config.mail.smtpUrl = mailpit.smtpUrl;
          mailInbox = mailpit.inboxUrl;
          return { exited: mailpit.exited, stop: () => mailpit.stop(), detail: `pid ${mailpit.pid}` };
        },
        supervised,
      ));
      await supervisor.run();
      stops.push(['Mailpit', () => supervisor.stop()]);
      step(`Mailpit (email) at ${mailInbox}: every email the service sends lands there (SMTP_URL sends for real)`);
    } else {
      step('no SMTP_URL and no Go to build Mailpit: emails stay queued until a mail server is configured');
    }
  } else {
    step('using SMTP_URL for email');
  }

  const summary = await importSandboxInventory(dataSource, config.projectRoot);
  step(`sandbox inventory: ${summary.rows} names (${summary.inserted} new)`);

  // SEARCH_ENGINE=opensearch without a cluster: a local node of our own, supervised like the others.
  let openSearchUrl = config.search.opensearch.url;
  if (config.search.engine === 'opensearch' && !openSearchUrl) {
    const port = await freePort();
    step('starting a local OpenSearch node (SEARCH_ENGINE=opensearch without OPENSEARCH_URL)');
    const supervisor = supervise(new Supervisor(
      'OpenSearch',
      async () => {
        const node = await startLocalOpenSearch({ cacheDir: config.toolCacheDir, dataDir: config.dataDir, heap: config.search.opensearch.heap, port, log: step });
        openSearchUrl = node.url;
        return { exited: node.exited, stop: () => node.stop(), detail: `pid ${node.pid}` };
      },
      supervised,
    ));
    await supervisor.run();
    stops.push(['OpenSearch', () => supervisor.stop()]);
  }

  // Loads the model and the indexes while Temporal and the worker start.
  step(`starting the search process (model and indexes${config.search.engine === 'opensearch' ? `, OpenSearch at ${openSearchUrl}` : ''}) on ${config.search.url}`);
  const searchEnv = { ...process.env, DATABASE_URL: postgres.url, SEARCH_URL: config.search.url, DATA_DIR: config.dataDir, TOOL_CACHE_DIR: config.toolCacheDir, LOG_LEVEL: config.logLevel, ...(openSearchUrl ? { OPENSEARCH_URL: openSearchUrl } : {}) };
  const searchSupervisor = supervise(new Supervisor(
    'the search process',
    async () => {
      const search = await startSearchProcess({ env: searchEnv });
      return { exited: search.exited, stop: () => search.stop(), detail: `pid ${search.pid}` };
    },
    supervised,
  ));
  const searchStarting = searchSupervisor.run();
  // A failure is reported where it is awaited, below (not as an unhandled rejection meanwhile).
  searchStarting.catch(() => undefined);

  let address = config.temporal.address;
  let devServer: DevServer | undefined;
  if (!address) {
    const cliPath = await ensureTemporalCli(config.toolCacheDir, config.temporal.cliPath);
    const options = { cliPath, dataDir: path.join(config.dataDir, 'temporal'), port: config.temporal.devServerPort, uiPort: config.temporal.uiPort, namespace: config.temporal.namespace, log: step };
    const supervisor = supervise(new Supervisor(
      'the Temporal dev server',
      async () => {
        devServer = await startDevServer(options);
        return { exited: devServer.exited, stop: () => devServer!.stop(), detail: devServer.pid ? `pid ${devServer.pid}` : undefined };
      },
      supervised,
    ));
    await supervisor.run();
    stops.push(['Temporal dev server', () => supervisor.stop()]);
    address = devServer!.address;
  } else {
    step(`using Temporal at ${address}`);
  }
  installTemporalRuntime(config.logLevel);
  const temporal = await connectTemporal(address, config.temporal.namespace, { callAttempts: API_TEMPORAL_CALL_ATTEMPTS });
  stops.push(['Temporal connections', () => temporal.close()]);

  const version = configuredVersion(config);
  step(`bundling workflows and starting the worker process${version ? ` (worker deployment ${version.deploymentName}, build ${version.buildId})` : ''}`);
  const workerEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: postgres.url,
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: config.temporal.namespace,
    TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
    TEMPORAL_WEBHOOK_TASK_QUEUE: config.temporal.webhookTaskQueue,
    TEMPORAL_WORKER_VERSIONING: String(config.temporal.workerVersioning),
    TEMPORAL_BUILD_ID: config.temporal.buildId ?? '',
    WEBHOOK_ALLOW_LOOPBACK: String(config.webhooks.allowLoopback),
    WORKER_METRICS_PORT: String(config.metrics.workerPort),
    METRICS_HOST: config.metrics.host,
    MASTER_KEY: encodeMasterKey(masterKey),
    QUOTE_SIGNING_KEY: resolveQuoteSigningPem(config, step),
    DATA_DIR: config.dataDir,
    TOOL_CACHE_DIR: config.toolCacheDir,
    LOG_LEVEL: config.logLevel,
    ...(config.mail.smtpUrl ? { SMTP_URL: config.mail.smtpUrl } : {}),
  };
  let workerMetricsUrl = '';
  const workerSupervisor = supervise(new Supervisor(
    'the worker',
    async () => {
      const worker = await forkUntilReady(WORKER_ENTRY, 'the worker', { env: workerEnv });
      workerMetricsUrl = String(worker.ready.metricsUrl);
      // A worker lets the activities under way finish (20 s), then it is killed.
      return { exited: worker.exited, stop: () => worker.stop(30_000), detail: `pid ${worker.pid}` };
    },
    supervised,
  ));
  await workerSupervisor.run();
  stops.push(['worker', () => workerSupervisor.stop()]);

  step('waiting for the search process');
  const searchProcess = await searchStarting;
  stops.push(['search process', () => searchSupervisor.stop()]);
  step(`search process ready (${searchProcess.detail})`);
  const search = new SearchClient(config.search.url, config.search.timeoutMs, (err) => logger.warn({ err }, 'search process unavailable'));
  const api = await startApiServer({ config, dataSource, masterKey, quoteSigner: resolveQuoteSigner(config), search, temporal, logger });
  const metrics = await startMetricsServer(config.metrics.host, config.metrics.port, async () => ({ contentType: metricsRegistry.contentType, text: await metricsRegistry.metrics() }));
  stops.push(['metrics', () => metrics.close()]);
  stops.push(['API', async () => {
    await api.close();
    search.close();
  }]);

  const credential = await sandboxCredential(new CredentialService(dataSource, new SecretBox(masterKey)), dataSource, path.join(config.dataDir, 'sandbox-credential.json'));
  const uiUrl = devServer?.uiUrl ?? '(the Temporal UI of your cluster)';
  process.stdout.write(
    [
      '',
      'Partner API is up.',
      `  API:          ${api.url}/api/partner/v1   (OpenAPI: ${api.url}/api/partner/v1/openapi.json)`,
      `  Reference:    ${api.url}/docs   (errors: ${api.url}/docs/errors)`,
      `  Health:       ${api.url}/healthz   ${api.url}/readyz`,
      `  Temporal UI:  ${uiUrl}   (namespace ${config.temporal.namespace})`,
      `  Metrics:      ${metrics.url} (API)   ${workerMetricsUrl} (worker)`,
      `  Mail:         ${mailInbox ? `${mailInbox}   (Mailpit: every email sent; partners apply at ${api.url}/partners/apply)` : config.mail.smtpUrl ? 'SMTP_URL' : 'not configured (emails stay queued)'}`,
      `  Traces:       ${tracing ? `OTLP to ${process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT}` : 'off (set OTEL_EXPORTER_OTLP_ENDPOINT to export them)'}`,
      '',
      `Sandbox credential (partner "${SANDBOX_PARTNER}", every scope):`,
      `  PARTNER_KEY_ID=${credential.keyId}`,
      `  PARTNER_SECRET=${credential.secret}`,
      '',
      'Try it (in another terminal):',
      `  PARTNER_API_URL=${api.url} PARTNER_KEY_ID=${credential.keyId} PARTNER_SECRET=${credential.secret} npm run --silent call -- GET '/api/partner/v1/domains/search?q=coffee'`,
      '',
      'Ctrl-C stops everything; data stays in ' + config.dataDir,
      '',
    ].join('\n'),
  );
}

/** The dev stack's own sandbox credential: issued once, then shown again on every start. */
async function sandboxCredential(credentials: CredentialService, dataSource: import('typeorm').DataSource, file: string) {
  if (existsSync(file)) {
    const { key_id: keyId } = JSON.parse(readFileSync(file, 'utf8')) as { key_id: string };
    const stored = await credentials.resolve(keyId);
    if (stored && !stored.revoked) return { keyId, secret: stored.secret };
  }
  const { partner } = await findOrCreatePartner(dataSource, SANDBOX_PARTNER);
  const issued = await credentials.issue({ partnerId: partner.id, environment: 'sandbox', scopes: [...SCOPES] });
  writeFileSync(file, JSON.stringify({ key_id: issued.keyId }) + '\n');
  return { keyId: issued.keyId, secret: issued.secret };
}

main().catch((err) => failed(err));
