/** The Temporal worker process alone (production, docker-compose). */
import { ownShutdownSignals } from '../db/embedded-postgres';
import { loadConfig } from '../config';
import { ensureMaintenanceWorkflows } from '../temporal/maintenance';
import { createServiceWorkers, installTemporalRuntime } from '../temporal/worker';
import { DEPLOYMENT_NAME, makeCurrentVersion, workerBuildId } from '../temporal/versioning';
import { exitStartFailed, openProjectDatabase, productionKeys } from './runtime';
import { connectTemporal } from './services';

async function main(): Promise<void> {
  const config = loadConfig();
  const { masterKey } = productionKeys(config, 'worker');
  if (!config.temporal.address) throw new Error('TEMPORAL_ADDRESS is required for the worker process (npm start runs a dev server)');
  installTemporalRuntime(config.logLevel);
  const { dataSource, postgres } = await openProjectDatabase(config);
  const temporal = await connectTemporal(config.temporal.address, config.temporal.namespace);
  const version = config.temporal.workerVersioning ? { deploymentName: DEPLOYMENT_NAME, buildId: workerBuildId(config.projectRoot, config.temporal.buildId) } : undefined;
  const worker = await createServiceWorkers({
    connection: temporal.nativeConnection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    webhookTaskQueue: config.temporal.webhookTaskQueue,
    dataSource,
    client: temporal.client,
    masterKey,
    allowLoopbackWebhooks: config.webhooks.allowLoopback,
    version,
  });
  const run = worker.run();
  if (version) await makeCurrentVersion(temporal.client, config.temporal.namespace, version);
  await ensureMaintenanceWorkflows(temporal.client, config.temporal.taskQueue);
  const stop = () => {
    worker.shutdown();
  };
  ownShutdownSignals();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  await run;
  await temporal.close();
  await dataSource.destroy();
  await postgres.stop();
}

main().catch((err) => exitStartFailed('worker', err));
