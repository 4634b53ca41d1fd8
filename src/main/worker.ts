/** The Temporal worker process alone (production, docker-compose). */
import { ownShutdownSignals } from '../db/embedded-postgres';
import { loadConfig } from '../config';
import { installTemporalRuntime, runServiceWorkers } from '../temporal/worker';
import { exitStartFailed, openProjectDatabase, productionKeys } from './runtime';
import { connectTemporal } from './services';

async function main(): Promise<void> {
  const config = loadConfig();
  const { masterKey } = productionKeys(config, 'worker');
  if (!config.temporal.address) throw new Error('TEMPORAL_ADDRESS is required for the worker process (npm start runs a dev server)');
  installTemporalRuntime(config.logLevel);
  const { dataSource, postgres } = await openProjectDatabase(config);
  const temporal = await connectTemporal(config.temporal.address, config.temporal.namespace);
  const { workers: worker, running: run } = await runServiceWorkers(config, { connection: temporal.nativeConnection, client: temporal.client, dataSource, masterKey });
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
