/**
 * The Temporal worker process alone (production, docker-compose; npm start runs it as a child it
 * supervises). Forked with an IPC channel, it reports `{ type: 'ready' }` once its workers poll and
 * stops when the channel closes (its parent went). It serves the SDK's metrics and the service's
 * on WORKER_METRICS_PORT (CONTRACT §13). With WORKER_HEALTH_FILE set, it touches that
 * file every 5 s while its workers run: the container's health check reads the file's age.
 */
import { writeFileSync } from 'node:fs';
import { ownShutdownSignals } from '../db/embedded-postgres';
import { loadConfig } from '../config';
import { installTemporalRuntime, runServiceWorkers } from '../temporal/worker';
import { exitStartFailed, openProjectDatabase, productionKeys } from './runtime';
import { connectTemporal } from './services';
import { createLogger } from '../logger';
import { freePort } from './child-process';
import { installTracing } from '../telemetry/tracing';
import { metricsRegistry, watchDeployment } from '../metrics/metrics';
import { deploymentOf, deployStatus } from '../temporal/deployment';
import { startMetricsServer } from '../metrics/server';
import { watchReconcile } from '../metrics/reconcile';

const HEALTH_EVERY_MS = 5_000;

async function main(): Promise<void> {
  // Signals first: a deploy's SIGTERM during the slow start (bundling, connecting) is kept, and
  // the workers shut down (letting activities finish) as soon as they exist.
  let stopRequested = false;
  let started: { shutdown(): void } | undefined;
  const stop = () => {
    stopRequested = true;
    started?.shutdown();
  };
  ownShutdownSignals();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const config = loadConfig();
  const tracing = installTracing('partner-api-worker');
  const { masterKey } = productionKeys(config, 'worker');
  if (!config.temporal.address) throw new Error('TEMPORAL_ADDRESS is required for the worker process (npm start runs a dev server)');
  // The SDK's metrics on a loopback port of their own, served joined to the service's on WORKER_METRICS_PORT.
  const sdkMetricsPort = await freePort();
  const logger = createLogger(config.logLevel);
  installTemporalRuntime(config.logLevel, { prometheusAddress: `127.0.0.1:${sdkMetricsPort}`, logger });
  // No mail server: nothing is lost (each email waits, queued, its workflow retrying), but say so at the start.
  if (!config.mail.smtpUrl) logger.warn('SMTP_URL is not set: emails are queued and retried, and none goes out until it is');
  const metrics = await startMetricsServer(config.metrics.host, config.metrics.workerPort, async () => {
    const sdk = await fetch(`http://127.0.0.1:${sdkMetricsPort}/metrics`).then((r) => r.text(), () => '# the SDK metrics did not answer\n');
    return { contentType: metricsRegistry.contentType, text: `${sdk.trimEnd()}\n${await metricsRegistry.metrics()}` };
  });
  const { dataSource, postgres } = await openProjectDatabase(config);
  watchReconcile(dataSource);
  const temporal = await connectTemporal(config.temporal.address, config.temporal.namespace);
  // Worker Versioning: each version's pollers and pinned open runs, for the alert on a version left holding runs with no worker.
  if (config.temporal.workerVersioning) {
    watchDeployment(async () => (await deployStatus(temporal.client, deploymentOf(config))).versions);
  }
  const { workers: worker, running: run } = await runServiceWorkers(config, { connection: temporal.nativeConnection, client: temporal.client, dataSource, masterKey, logger });
  started = worker;
  if (stopRequested) worker.shutdown();
  const healthFile = config.workerHealthFile;
  const health = healthFile
    ? setInterval(() => {
        if (worker.running) writeFileSync(healthFile, `${new Date().toISOString()}\n`);
      }, HEALTH_EVERY_MS)
    : undefined;
  if (healthFile) writeFileSync(healthFile, `${new Date().toISOString()}\n`);
  if (process.send) {
    process.once('disconnect', stop);
    process.send({ type: 'ready', metricsUrl: metrics.url });
  }
  try {
    await run;
  } finally {
    if (health) clearInterval(health);
  }
  await metrics.close();
  await temporal.close();
  await dataSource.destroy();
  await postgres.stop();
  await tracing?.shutdown();
  // The IPC channel would keep an orphaned child alive.
  if (process.connected) process.disconnect();
}

main().catch((err) => exitStartFailed('worker', err));
