import { Client, type ClientConfig } from 'pg';

/**
 * A Postgres connection of its own (LISTEN, session advisory locks: what a pooled connection
 * cannot hold), connected and prepared by `prepare`; ended again if either fails.
 */
export async function dedicatedClient(config: ClientConfig, prepare: (client: Client) => Promise<void>, onError?: (client: Client, err: Error) => void): Promise<Client> {
  const client = new Client(config);
  client.on('error', (err) => onError?.(client, err));
  try {
    await client.connect();
    await prepare(client);
    return client;
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}
