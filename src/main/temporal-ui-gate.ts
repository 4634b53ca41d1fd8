/**
 * The operators' gate between the Temporal UI and Temporal (src/temporal/ui-gate.ts), as a process
 * of its own (docker-compose's `temporal-ui-gate`): the UI's TEMPORAL_ADDRESS points here. In
 * production it refuses to start without the UI's identity provider (TEMPORAL_UI_OIDC_ISSUER and
 * TEMPORAL_UI_OIDC_AUDIENCE): every write it passes must name a verified operator.
 */
import { loadConfig } from '../config';
import { createLogger } from '../logger';
import { TemporalUiGate } from '../temporal/ui-gate';
import { exitStartFailed, openProjectDatabase } from './runtime';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const gate = config.temporal.uiGate;
  if (!config.temporal.address) throw new Error('TEMPORAL_ADDRESS is required: the Temporal frontend the gate passes calls to');
  if (config.production && (!gate.oidcIssuer || !gate.oidcAudience)) {
    throw new Error('TEMPORAL_UI_OIDC_ISSUER and TEMPORAL_UI_OIDC_AUDIENCE are required in production: without the UI sign-in, no write could name its operator');
  }
  const { dataSource, postgres } = await openProjectDatabase(config);
  const server = new TemporalUiGate({ upstream: config.temporal.address, dataSource, oidcIssuer: gate.oidcIssuer, oidcAudience: gate.oidcAudience, operatorGroup: gate.operatorGroup, groupsClaim: gate.groupsClaim, logger });
  const port = await server.listen(gate.host, gate.port);
  logger.info({ port, upstream: config.temporal.address, operatorGroup: gate.operatorGroup, signIn: gate.oidcIssuer ?? 'none (development)' }, 'temporal UI gate listening');
  const stop = () => {
    void server
      .close()
      .then(() => dataSource.destroy())
      .then(() => postgres.stop())
      .finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err) => exitStartFailed('temporal-ui-gate', err));
