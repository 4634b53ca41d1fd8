/**
 * The Temporal worker process alone (production, docker-compose; npm start runs it as a child it
 * supervises). Forked with an IPC channel, it reports `{ type: 'ready' }` once its workers poll and
 * stops when the channel closes (its parent went). With WORKER_HEALTH_FILE set, it touches that
 * file every 5 s while its workers run: the container's health check reads the file's age.
 */
import { writeFileSync } from 'node:fs';
import { ownShutdownSignals } from '../db/embedded-postgres';
import { loadConfig } from '../config';
import { installTemporalRuntime, runServiceWorkers } from '../temporal/worker';
import { exitStartFailed, openProjectDatabase, productionKeys } from './runtime';
import { connectTemporal } from './services';

const HEALTH_EVERY_MS = 5_000;

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
  const healthFile = process.env.WORKER_HEALTH_FILE;
  const health = healthFile
    ? setInterval(() => {
        if (worker.running) writeFileSync(healthFile, `${new Date().toISOString()}\n`);
      }, HEALTH_EVERY_MS)
    : undefined;
  if (healthFile) writeFileSync(healthFile, `${new Date().toISOString()}\n`);
  if (process.send) {
    process.once('disconnect', stop);
    process.send({ type: 'ready' });
  }
  try {
    await run;
  } finally {
    if (health) clearInterval(health);
  }
  await temporal.close();
  await dataSource.destroy();
  await postgres.stop();
  // The IPC channel would keep an orphaned child alive.
  if (process.connected) process.disconnect();
}

main().catch((err) => exitStartFailed('worker', err));
