/**
 * A part of the service run as a child of this process (the search process, npm start's worker):
 * forked with an IPC channel, resolved once it reports `{ type: 'ready' }`, stopped with SIGTERM
 * (then SIGKILL after a grace period) and waited for. A child stops itself when this process goes
 * (its IPC channel closes), so none is left behind.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { listenOnLoopback } from './loopback';

/**
 * A TCP port free on loopback now, for a process that must be told its port before it listens
 * (Postgres, a Temporal server, a worker's metrics). A server of this process listens with
 * listenOnLoopback (src/main/loopback.ts) instead, which leaves no gap for another to take the port.
 */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0];
}

/**
 * `count` distinct free ports: each is held until all are found, since the kernel may hand a
 * port just closed out again (a chaos run's Temporal UI and worker metrics once got the same one).
 *
 * Each is then left reserved for the minute of TCP's TIME_WAIT (a connection to it, closed from
 * its listening side first, as the Temporal SDK's ephemeral server does on Linux): until then the
 * kernel hands the port to no other process's bind to port 0 and to no outgoing connection as its
 * own port, while a server told the port still binds it (every one we start sets SO_REUSEADDR:
 * Go, Postgres, Node, the JVM, the Temporal SDK's Rust core). Without it, a port waiting seconds
 * for its server (a dev stack starts Postgres first) could be taken meanwhile by any connection on
 * the machine.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  const ports: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = net.createServer();
      servers.push(server);
      ports.push((await listenOnLoopback(server)).port);
    }
    await Promise.all(servers.map((server, i) => closeFromListeningSide(server, ports[i])));
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/** One connection to `server` (listening on `port`), closed by the listening side first, which leaves that side in TIME_WAIT. */
async function closeFromListeningSide(server: net.Server, port: number): Promise<void> {
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  const client = net.connect(port, '127.0.0.1');
  await Promise.all([
    accepted.then(([socket]) => {
      const closed = once(socket, 'close');
      // Nothing was sent either way, so this is a FIN (unread data would make it a reset, and no TIME_WAIT).
      socket.end();
      return closed;
    }),
    // The client ends when the listening side's FIN reaches it (allowHalfOpen is off), then closes.
    once(client, 'close'),
  ]);
}

export interface ReadyChild {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The child's ready message (it may carry, say, the address it listens on). */
  readonly ready: { type: 'ready'; [key: string]: unknown };
  /** Settles with how it ended (`code 1`, `signal SIGKILL`), whatever the reason. */
  readonly exited: Promise<string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface ForkOptions {
  /** The child's whole environment (its configuration). */
  env: NodeJS.ProcessEnv;
  /** Where its output goes: inherited (npm start) or handed to a function line by line. */
  output?: 'inherit' | ((line: string) => void);
  /** How long it may take to report ready (30 minutes unless given). */
  timeoutMs?: number;
  /** Node's flags for the child, after this process's own. */
  execArgv?: string[];
}

/**
 * The last `keep` lines a child has written to its stdout and stderr (pipes), kept as they come:
 * what a server that fails to start said, for its error.
 */
export function recentOutput(child: ChildProcess, keep: number): string[] {
  const lines: string[] = [];
  const collect = (chunk: Buffer) => {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    lines.splice(0, Math.max(0, lines.length - keep));
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return lines;
}

/** How a child process ended, for the log: `code 1`, `signal SIGKILL`. */
export function howItEnded(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `signal ${signal}` : `code ${code}`;
}

export async function forkUntilReady(entry: string, name: string, options: ForkOptions): Promise<ReadyChild> {
  const output = options.output ?? 'inherit';
  const child = fork(entry, [], { env: options.env, execArgv: [...process.execArgv, ...(options.execArgv ?? [])], stdio: output === 'inherit' ? ['ignore', 'inherit', 'inherit', 'ipc'] : ['ignore', 'pipe', 'pipe', 'ipc'] });
  if (typeof output === 'function') {
    for (const stream of [child.stdout!, child.stderr!]) {
      let carry = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const lines = (carry + chunk).split('\n');
        carry = lines.pop()!;
        lines.forEach(output);
      });
    }
  }
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(howItEnded(code, signal))));
  const ready = new Promise<ReadyChild['ready']>((resolve, reject) => {
    const timeoutMs = options.timeoutMs ?? 30 * 60_000;
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs / 1000} s`)), timeoutMs);
    child.on('message', (message: { type?: string }) => {
      if (message?.type !== 'ready') return;
      clearTimeout(timer);
      resolve(message as ReadyChild['ready']);
    });
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${how}) before it was ready`));
    });
  });
  let message: ReadyChild['ready'];
  try {
    message = await ready;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    child,
    pid: child.pid!,
    ready: message,
    exited,
    stop: async (graceMs = 60_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
