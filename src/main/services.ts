/** Wiring shared by the entry points: Temporal connections and the API server. */
import http from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { Config } from '../config';
import { createApp } from '../api/app';
import { CredentialService } from '../auth/credentials';
import { SecretBox } from '../auth/secret-box';
import { KeywordSearch } from '../discovery/search';
import type { QuoteTokenSigner } from '../orders/quote-token';

export interface TemporalConnections {
  connection: Connection;
  nativeConnection: NativeConnection;
  client: Client;
  close(): Promise<void>;
}

export async function connectTemporal(address: string, namespace: string): Promise<TemporalConnections> {
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  const client = new Client({ connection, namespace });
  return {
    connection,
    nativeConnection,
    client,
    close: async () => {
      await nativeConnection.close();
      await connection.close();
    },
  };
}

export function temporalReadiness(connection: Connection): () => Promise<void> {
  return async () => {
    await connection.workflowService.getSystemInfo({});
  };
}

export interface ApiServerDeps {
  config: Config;
  dataSource: DataSource;
  masterKey: Buffer;
  quoteSigner: QuoteTokenSigner;
  temporal: Pick<TemporalConnections, 'connection' | 'client'>;
  logger: Logger;
}

export async function startApiServer(deps: ApiServerDeps): Promise<{ server: http.Server; url: string; close(): Promise<void> }> {
  const secretBox = new SecretBox(deps.masterKey);
  const app = createApp({
    config: deps.config,
    dataSource: deps.dataSource,
    credentials: new CredentialService(deps.dataSource, secretBox),
    secretBox,
    search: new KeywordSearch(deps.dataSource),
    workflows: { client: deps.temporal.client, taskQueue: deps.config.temporal.taskQueue },
    quoteSigner: deps.quoteSigner,
    logger: deps.logger,
    temporalReady: temporalReadiness(deps.temporal.connection),
  });
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.config.http.port, deps.config.http.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : deps.config.http.port;
  const url = deps.config.http.publicBaseUrl ?? `http://${deps.config.http.host}:${port}`;
  return {
    server,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
