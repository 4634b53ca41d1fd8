import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { freePort, freePorts } from '../../src/main/child-process';
import { listenOnLoopback } from '../../src/main/loopback';

/** Sockets on 127.0.0.1:`port` in TIME_WAIT (state 06 of /proc/net/tcp; addresses in hex, port after the colon). */
function timeWaitOn(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[1] === local && fields[3] === '06').length;
}

function listenOn(port: number): Promise<net.Server> {
  const server = net.createServer();
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

describe('free ports for the processes npm start and the tests start', () => {
  it('are distinct, reserved by a TIME_WAIT (no bind to port 0 and no outgoing connection is given them), and a server told one binds it at once', async () => {
    const ports = [await freePort(), ...(await freePorts(3))];
    assert.equal(new Set(ports).size, ports.length);
    for (const port of ports) assert.ok(timeWaitOn(port) >= 1, `port ${port} has no TIME_WAIT holding it`);

    // The kernel's own choice of a port skips them while the TIME_WAIT lasts.
    const chosen: number[] = [];
    for (let i = 0; i < 200; i++) {
      const probe = net.createServer();
      chosen.push((await listenOnLoopback(probe)).port);
      await new Promise((resolve) => probe.close(resolve));
    }
    assert.deepEqual(chosen.filter((port) => ports.includes(port)), []);

    // A server told the port (SO_REUSEADDR, as Node, Go, Postgres and the JVM set) listens on it.
    const servers = await Promise.all(ports.map(listenOn));
    try {
      for (const [i, server] of servers.entries()) assert.equal((server.address() as net.AddressInfo).port, ports[i]);
    } finally {
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    }
  });
});
