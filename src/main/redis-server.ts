/**
 * `npm start`'s Redis for admission (bench/RESULTS.md): Debian's `redis-server` when installed,
 * on a unix socket in DATA_DIR/redis, never evicting, without persistence while it runs.
 *
 * Its data must survive a clean stop but never a crash, like Postgres' unlogged tables: a clean
 * stop (SIGTERM) writes a snapshot, the next start loads it and deletes the file at once, so a
 * crash leaves no snapshot and the next Redis comes back empty, which starts a new crash epoch
 * (RedisAdmission); the first start with Redis after Postgres admission starts one too
 * (src/auth/admission-store.ts).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { findOnPath, run } from '../temporal/tools';
import { recentOutput } from './child-process';

const SNAPSHOT = 'admission.rdb';

export interface RedisServer {
  /** The unix socket, as REDIS_URL. */
  url: string;
  pid: number;
  /** Resolves with the exit code when the server has exited. */
  exited: Promise<number | null>;
  /** Resolves with the signal that ended it, if one did. */
  exitSignal: Promise<NodeJS.Signals | null>;
  stop(): Promise<void>;
}

/** The redis-server on PATH, if any. */
export function findRedisServer(): string | undefined {
  return findOnPath('redis-server');
}

/**
 * Installs Debian's redis-server with apt-get, as `.ci/run` does, when this process may (root,
 * apt-get on PATH); resolves with the binary, or undefined when it could not (the caller then
 * admits in Postgres). A failed step's last line goes to `log`; a slow one shows a heartbeat.
 */
export async function installRedisServer(log: (m: string) => void): Promise<string | undefined> {
  const aptGet = findOnPath('apt-get');
  if (!aptGet || process.getuid?.() !== 0) return undefined;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const step = (args: string[]) =>
    run(aptGet, args, { env, label: `apt-get ${args.join(' ')}` }).then(
      () => true,
      (err: Error) => {
        log(`apt-get ${args.join(' ')}: ${err.message.trim().split('\n').at(-1)}`);
        return false;
      },
    );
  if (!(await step(['install', '-y', '-q', 'redis-server'])) && !((await step(['update', '-q'])) && (await step(['install', '-y', '-q', 'redis-server'])))) return undefined;
  return findRedisServer();
}

/** The version of a redis-server binary (`7.0.15`), from `--version`; undefined when it does not run. */
export function redisServerVersion(executable: string): string | undefined {
  try {
    return /v=(\d+\.\d+\.\d+)/.exec(execFileSync(executable, ['--version'], { encoding: 'utf8', timeout: 5_000 }))?.[1];
  } catch {
    return undefined;
  }
}

/** Whether this binary can run npm start's Redis: `shutdown-on-sigterm` came with Redis 7.0. */
export function redisServerUsable(executable: string): { ok: boolean; version?: string } {
  const version = redisServerVersion(executable);
  return { ok: version !== undefined && Number(version.split('.')[0]) >= 7, version };
}

export async function startRedisServer(executable: string, dataDir: string, log: (m: string) => void = () => undefined): Promise<RedisServer> {
  const dir = path.join(dataDir, 'redis');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const socket = path.join(dir, 'redis.sock');
  const pidFile = path.join(dir, 'redis.pid');
  // A redis-server left running on this directory (its npm start was killed) would write its older
  // snapshot over the next one's data when it stops: never run two.
  const previous = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : NaN;
  if (Number.isInteger(previous) && previous > 0 && isRedisServer(previous)) {
    throw new Error(`a redis-server (pid ${previous}) still runs on ${dir}: stop it (kill ${previous}) and start again`);
  }
  const child = spawn(
    executable,
    [
      '--port', '0',
      '--unixsocket', socket,
      '--unixsocketperm', '700',
      '--dir', dir,
      '--dbfilename', SNAPSHOT,
      '--save', '',
      '--appendonly', 'no',
      '--pidfile', pidFile,
      // Full: writes are refused and signed requests answered 503, rather than the host running out of memory.
      '--maxmemory', '512mb',
      '--maxmemory-policy', 'noeviction',
      '--shutdown-on-sigterm', 'save',
      '--shutdown-on-sigint', 'save',
      '--daemonize', 'no',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output = recentOutput(child, 50);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const exited = exit.then((e) => e.code);
  // However this process ends, its Redis stops too (SIGTERM: with a snapshot, as a clean stop).
  const stopOnExit = () => child.exitCode === null && child.kill('SIGTERM');
  process.once('exit', stopOnExit);
  void exited.then(() => process.off('exit', stopOnExit));
  await waitForReady(child, output, exited);
  // Loaded: a crash from now on must not find this snapshot again.
  rmSync(path.join(dir, SNAPSHOT), { force: true });
  log(`Redis (admission) on ${socket}`);
  return {
    url: socket,
    pid: child.pid!,
    exited,
    exitSignal: exit.then((e) => e.signal),
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function isRedisServer(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server');
  } catch {
    return false;
  }
}

async function waitForReady(child: ChildProcess, output: string[], exited: Promise<number | null>): Promise<void> {
  const ready = new Promise<void>((resolve) => {
    const check = () => (output.some((l) => /ready to accept connections/i.test(l)) ? resolve() : undefined);
    child.stdout!.on('data', check);
  });
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`redis-server did not start within 10 s:\n${output.join('\n')}`)), 10_000).unref());
  const died = exited.then((code) => {
    throw new Error(`redis-server exited (${code}):\n${output.join('\n')}`);
  });
  await Promise.race([ready, timeout, died]);
}
