/** What the benchmarks share. */
import net, { type AddressInfo } from 'node:net';

/** A free TCP port on loopback (for a benchmark's own Postgres). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
