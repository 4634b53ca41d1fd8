import { createHash } from 'node:crypto';
import { StripeCheckout, type StripeSettings } from '../checkout/stripe';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { MasterKeyring } from '../auth/secret-box';
import { bundleWorkflowCode, DefaultLogger, type WorkflowBundleWithSourceMap, NativeConnection, Runtime, Worker, type LogLevel, type Logger as SdkLogger, type WorkerOptions } from '@temporalio/worker';
import type { Logger as PinoLogger } from 'pino';
import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { createActivities } from '../../activities';
import type { ActivityMail } from '../../activities/mail';
import { smtpTransport } from '../mail/send';
import { workflowStarters } from './starters';
import { configuredVersion, deploymentOptions, makeCurrentIfFirst, packageVersion, workerBuildId, type WorkerVersion } from './versioning';
import { keepReleaseSeen, recordRelease, workerCode } from './releases';
import { ensureMaintenanceWorkflows } from './maintenance';
import { serviceWorkerInterceptors, serviceWorkflowInterceptorModules, WORKFLOWS_PATH } from './request-context';
import { linksBaseUrl, type Config } from '../config';
import { tracingWorkflowModules } from './tracing';

/** Where `tools-cli bundle` writes the bundle for the image and for `npm test` (dist/workflow-bundle.js). */
export const PREBUILT_BUNDLE = path.resolve(__dirname, '..', '..', 'workflow-bundle.js');

/**
 * A digest of what goes into a bundle: every compiled workflow module (by path and content), the
 * interceptor modules bundled with them (tracing's too, when it is on) and the versions of the
 * Temporal packages whose workflow runtime is bundled in, so that neither a change of the code nor
 * an upgrade of the SDK runs an old bundle.
 */
export function workflowSourcesDigest(): string {
  const workflows = path.dirname(WORKFLOWS_PATH);
  const hash = createHash('sha256');
  for (const file of readdirSync(workflows, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js')).sort()) hash.update(`${file}\0`).update(readFileSync(path.join(workflows, file))).update('\0');
  for (const module of serviceWorkflowInterceptorModules()) hash.update(`${module}\0`).update(existsSync(module) ? readFileSync(module) : '').update('\0');
  for (const pkg of ['@temporalio/workflow', '@temporalio/common', '@temporalio/worker']) hash.update(`${pkg}@${(JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), 'utf8')) as { version: string }).version}\0`);
  return hash.digest('hex');
}

/**
 * The prebuilt bundle's path when it was made from the compiled workflow modules as they are
 * now (the digest written beside it, `<file>.digest`), so that a change since never runs stale;
 * otherwise undefined, and the caller bundles.
 */
export function freshPrebuiltBundle(file = PREBUILT_BUNDLE): string | undefined {
  if (!existsSync(file) || !existsSync(`${file}.digest`)) return undefined;
  return readFileSync(`${file}.digest`, 'utf8').trim() === workflowSourcesDigest() ? file : undefined;
}

/** The workflows with the service's workflow interceptors (webpack + swc): the one bundle production and the tests run. */
export function serviceWorkflowBundle(logger: SdkLogger = new DefaultLogger('WARN')): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, workflowInterceptorModules: serviceWorkflowInterceptorModules(), logger });
}

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  dataSource: DataSource;
  masterKey: MasterKeyring | Buffer;
  /** WEBHOOK_ALLOW_LOOPBACK, for the delivery activities. */
  allowLoopbackWebhooks: boolean;
  /** Live card refunds through Stripe (a failed transfer, an operator's refund), when configured. */
  stripe?: StripeSettings;
  /** For activities that start workflows (the fulfilment recovery sweep). */
  client: Client;
  /** A prebuilt bundle (serviceWorkflowBundle; tests build it once); otherwise the worker bundles one. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Worker Versioning: the version this worker serves; absent for an unversioned worker. */
  version?: WorkerVersion;
  /** Where webhook deliveries run (createServiceWorkers serves it with a second worker). */
  webhookTaskQueue?: string;
  /** Email: SMTP transport, From and the links' base (absent: emails wait, queued). */
  mail?: ActivityMail;
  /** Activity slots of this worker (the SDK's default when absent). */
  maxConcurrentActivityTaskExecutions?: number;
}

export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  return Worker.create({
    // The request id (and tracing, when on) carried into activities; the bundle has the workflow side.
    ...serviceWorkerInterceptors(),
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    activities: createActivities({
      dataSource: deps.dataSource,
      masterKey: deps.masterKey,
      allowLoopbackWebhooks: deps.allowLoopbackWebhooks,
      ...(deps.mail ? { mail: deps.mail } : {}),
      ...(deps.stripe ? { hosted: { live: new StripeCheckout(deps.stripe) } } : {}),
      starters: workflowStarters({ client: deps.client, taskQueue: deps.taskQueue, webhookTaskQueue: deps.webhookTaskQueue }, deps.dataSource),
    }),
    workflowBundle: deps.workflowBundle ?? (await serviceWorkflowBundle()),
    ...(deps.version ? { workerDeploymentOptions: deploymentOptions(deps.version) } : {}),
    ...(deps.maxConcurrentActivityTaskExecutions ? { maxConcurrentActivityTaskExecutions: deps.maxConcurrentActivityTaskExecutions } : {}),
    // A deploy's SIGTERM lets activities under way finish (or see their cancellation) this long.
    shutdownGraceTime: '20 seconds',
  });
}

/** The worker process's workers: one for the service's task queue, one for webhook deliveries. */
export interface ServiceWorkers {
  run(): Promise<void>;
  shutdown(): void;
  readonly running: boolean;
}

/**
 * Both workers of the worker process. Webhook deliveries (workflow and activities) run on their
 * own task queue with their own slots: a partner endpoint that takes 10 s to fail can hold only
 * delivery slots, never those of registrar and database steps. Both poll the same bundle.
 */
export async function createServiceWorkers(deps: WorkerDeps & { webhookTaskQueue: string }): Promise<ServiceWorkers> {
  const bundle = deps.workflowBundle ?? (await serviceWorkflowBundle());
  const main = await createWorker({ ...deps, workflowBundle: bundle });
  const webhooks = await createWorker({ ...deps, workflowBundle: bundle, taskQueue: deps.webhookTaskQueue, maxConcurrentActivityTaskExecutions: 50 });
  const workers = [main, webhooks];
  return {
    run: async () => {
      await Promise.all(workers.map((w) => w.run()));
    },
    shutdown: () => {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    },
    get running() {
      return workers.some((w) => w.getState() === 'RUNNING');
    },
  };
}

/**
 * The worker process's part, as configured: both workers running, this version made current
 * (Worker Versioning), then the maintenance workflows and the month-end Schedule ensured.
 */
export async function runServiceWorkers(
  config: Config,
  parts: { connection: NativeConnection; client: Client; dataSource: DataSource; masterKey: MasterKeyring | Buffer; logger?: PinoLogger },
): Promise<{ workers: ServiceWorkers; running: Promise<void> }> {
  const version = configuredVersion(config);
  // Recorded before it can start a run: when code of a release last ran decides when a
  // deprecated patch may go (admin workflows patches).
  const release = workerCode(version?.buildId ?? workerBuildId(config.projectRoot, config.temporal.buildId), packageVersion(config.projectRoot));
  await recordRelease(parts.dataSource, release);
  const workers = await createServiceWorkers({
    ...parts,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    webhookTaskQueue: config.temporal.webhookTaskQueue,
    allowLoopbackWebhooks: config.webhooks.allowLoopback,
    stripe: config.stripe,
    mail: {
      ...(config.mail.smtpUrl ? { transport: smtpTransport(config.mail.smtpUrl) } : {}),
      from: config.mail.from,
      publicBaseUrl: linksBaseUrl(config),
    },
    version,
    // The bundle built ahead holds no tracing interceptors (tracing is off at image build): with
    // tracing on, the worker bundles its own with them.
    ...(config.temporal.workflowBundle && tracingWorkflowModules().length === 0 ? { workflowBundle: { codePath: config.temporal.workflowBundle } } : {}),
  });
  const stopSeeing = keepReleaseSeen(parts.dataSource, release, (err) => parts.logger?.warn({ err }, 'could not record that this release still runs (worker_releases): retried in a minute'));
  const running = workers.run().finally(async () => {
    stopSeeing();
    await recordRelease(parts.dataSource, release).catch(() => undefined);
  });
  if (version && !(await makeCurrentIfFirst(parts.client, config.temporal.namespace, version))) {
    parts.logger?.info({ buildId: version.buildId }, 'this release is not the current version: it takes new runs once an operator ramps or promotes it (admin deploy status, admin deploy promote)');
  }
  await ensureMaintenanceWorkflows(parts.client, config.temporal.taskQueue);
  return { workers, running };
}

/**
 * The SDK runtime, once per process: its log at WARN and above unless debugging (the bundler is
 * chatty at INFO), and no signal handlers of its own, so the entry point decides the order in
 * which things stop.
 */
export function installTemporalRuntime(level: string, options: { prometheusAddress?: string; logger?: PinoLogger } = {}): void {
  const sdkLevel: LogLevel = level === 'debug' || level === 'trace' ? 'DEBUG' : level === 'error' || level === 'fatal' ? 'ERROR' : 'WARN';
  // Core's own lines (the Rust side) go through the same logger at the same level, instead of
  // straight to the console at WARN.
  // With an address, Core serves the SDK's own metrics there (`temporal_…`: schedule-to-start
  // latency, task slots, sticky cache, activity failures), in seconds; the worker's metrics endpoint joins them to the service's.
  const metrics = options.prometheusAddress ? { metrics: { prometheus: { bindAddress: options.prometheusAddress, useSecondsForDurations: true } } } : {};
  // The SDK's lines (and Core's, forwarded) as the service's JSON lines (pino, with redaction);
  // an activity's lines carry its workflow id, run id and activity type (the SDK's context meta).
  const logger = options.logger ? sdkLoggerFor(options.logger.child({ component: 'temporal' }), sdkLevel) : new DefaultLogger(sdkLevel);
  Runtime.install({ logger, shutdownSignals: [], telemetryOptions: { logging: { filter: { core: sdkLevel, other: 'ERROR' }, forward: {} }, ...metrics } });
}

/** The SDK's Logger over a pino logger, at the SDK's level. */
function sdkLoggerFor(logger: PinoLogger, level: LogLevel): SdkLogger {
  const order: LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];
  const method = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;
  const log = (at: LogLevel, message: string, meta?: Record<string, unknown>) => {
    if (order.indexOf(at) < order.indexOf(level)) return;
    logger[method[at]](meta ?? {}, message);
  };
  return {
    log,
    trace: (m, meta) => log('TRACE', m, meta),
    debug: (m, meta) => log('DEBUG', m, meta),
    info: (m, meta) => log('INFO', m, meta),
    warn: (m, meta) => log('WARN', m, meta),
    error: (m, meta) => log('ERROR', m, meta),
  };
}
