/**
 * The API process alone (production, docker-compose): needs a migrated database, a Temporal
 * frontend and, for search only, the host's search process at SEARCH_URL (src/main/search.ts).
 * Its metrics are on METRICS_HOST:METRICS_PORT (CONTRACT §13). It loads no model and holds no index; while the search process is down, search answers 503
 * and every other endpoint works.
 */
// First: tracing (when configured) must patch http and Koa before they load.
import { activeTracing } from '../telemetry/register-api';
import { ownShutdownSignals } from '../db/embedded-postgres';
import { loadConfig } from '../config';
import { createLogger } from '../logger';
import { exitStartFailed, openProjectDatabase, productionKeys, StartRefused } from './runtime';
import { SearchClient } from '../search/search-client';
import { API_TEMPORAL_CALL_ATTEMPTS, connectTemporal, startApiServer } from './services';
import { metricsRegistry } from '../metrics/metrics';
import { startMetricsServer } from '../metrics/server';

async function main(): Promise<void> {
  const config = loadConfig();
  // Every link the API hands out (checkout, progress, referral, onboarding) starts with it: in
  // production a link to localhost would reach nobody.
  if (config.production && !config.http.publicBaseUrl) {
    throw new StartRefused('api: refusing to start in production without PUBLIC_BASE_URL (https://partners.example.com): the links handed to partners and buyers start with it');
  }
  const { masterKey, quoteSigner } = productionKeys(config, 'api');
  const logger = createLogger(config.logLevel);
  if (!config.temporal.address) throw new Error('TEMPORAL_ADDRESS is required for the API process (npm start runs a dev server)');
  const { dataSource, postgres } = await openProjectDatabase(config);
  const temporal = await connectTemporal(config.temporal.address, config.temporal.namespace, { callAttempts: API_TEMPORAL_CALL_ATTEMPTS });
  const search = new SearchClient(config.search.url, config.search.timeoutMs, (err) => logger.warn({ err }, 'search process unavailable'));
  const api = await startApiServer({ config, dataSource, masterKey, quoteSigner, search, temporal, logger });
  const metrics = await startMetricsServer(config.metrics.host, config.metrics.port, async () => ({ contentType: metricsRegistry.contentType, text: await metricsRegistry.metrics() }));
  logger.info({ url: api.url, metrics: metrics.url }, 'API listening');
  const stop = async () => {
    await api.close();
    await metrics.close();
    search.close();
    await temporal.close();
    await dataSource.destroy();
    await postgres.stop();
    await activeTracing()?.shutdown();
    process.exit(0);
  };
  ownShutdownSignals();
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err) => exitStartFailed('api', err));
