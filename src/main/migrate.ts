/**
 * Applies pending migrations and exits (docker-compose's migration job; npm start does it itself).
 * It needs no key, but refuses to run without them like the API and the worker: a deployment
 * missing them should stop at its first step, before its database is touched.
 */
import { loadConfig } from '../config';
import { exitStartFailed, openProjectDatabase, productionKeys } from './runtime';

async function main(): Promise<void> {
  const config = loadConfig();
  productionKeys(config, 'migrate');
  const { dataSource, postgres } = await openProjectDatabase(config);
  const pending = await dataSource.showMigrations();
  process.stdout.write(`migrations up to date${pending ? ' (some still pending!)' : ''}\n`);
  await dataSource.destroy();
  await postgres.stop();
  if (pending) process.exit(1);
}

main().catch((err) => exitStartFailed('migrate', err));
