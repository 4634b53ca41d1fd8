/** The API process alone (production, docker-compose): needs a migrated database and a Temporal frontend. */
import { loadConfig } from '../config';
import { createLogger } from '../logger';
import { exitStartFailed, openProjectDatabase, productionKeys } from './runtime';
import { connectTemporal, startApiServer, startSearch } from './services';

async function main(): Promise<void> {
  const config = loadConfig();
  const { masterKey, quoteSigner } = productionKeys(config, 'api');
  const logger = createLogger(config.logLevel);
  if (!config.temporal.address) throw new Error('TEMPORAL_ADDRESS is required for the API process (npm start runs a dev server)');
  const { dataSource, postgres } = await openProjectDatabase(config);
  const temporal = await connectTemporal(config.temporal.address, config.temporal.namespace);
  const search = await startSearch(config, dataSource, (m) => logger.info(m));
  const api = await startApiServer({ config, dataSource, masterKey, quoteSigner, search, temporal, logger });
  logger.info({ url: api.url }, 'API listening');
  const stop = async () => {
    await api.close();
    search.save();
    await temporal.close();
    await dataSource.destroy();
    await postgres.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err) => exitStartFailed('api', err));
