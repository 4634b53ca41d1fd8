/** Applies pending migrations and exits (docker-compose's migration job; npm start does it itself). */
import { loadConfig } from '../config';
import { openProjectDatabase } from './runtime';

async function main(): Promise<void> {
  const { dataSource, postgres } = await openProjectDatabase(loadConfig());
  const pending = await dataSource.showMigrations();
  process.stdout.write(`migrations up to date${pending ? ' (some still pending!)' : ''}\n`);
  await dataSource.destroy();
  await postgres.stop();
  if (pending) process.exit(1);
}

main().catch((err) => {
  process.stderr.write(`migrate: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
