import type net from 'node:net';

/**
 * Listens `server` on a free port of loopback and answers its port and its http:// URL: port 0,
 * so the kernel picks the port as the server binds it and no other listener can take it first.
 * The one way a server of this process (a test's app or webhook receiver, a benchmark's API) gets
 * a port; a process that must be told its port before it starts gets one from freePorts
 * (src/main/child-process.ts), which listens here to find it.
 */
export async function listenOnLoopback(server: net.Server): Promise<{ port: number; url: string }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as net.AddressInfo;
  return { port, url: `http://127.0.0.1:${port}` };
}
