/** The admin CLI's Temporal client: TEMPORAL_ADDRESS, else the dev stack's server on this machine. */
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';

export async function withTemporal<T>(config: Config, work: (client: Client) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address: config.temporal.address ?? `127.0.0.1:${config.temporal.devServerPort}` });
  try {
    return await work(new Client({ connection, namespace: config.temporal.namespace }));
  } finally {
    await connection.close();
  }
}
