/** A redis-server of the test's own (Debian's package; `.ci/run` installs it), in a fresh directory. */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { markAdmissionStoreFresh } from '../../src/auth/redis-admission';
import { findRedisServer, startRedisServer, type RedisServer } from '../../src/main/redis-server';

export interface TestRedis extends RedisServer {
  /** Kills it (SIGKILL: no snapshot), as a crash would. */
  crash(): Promise<void>;
  /** Starts it again in the same directory (after a crash: empty). */
  restart(): Promise<TestRedis>;
  remove(): Promise<void>;
}

export async function startTestRedis(dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-redis-')), fresh = true): Promise<TestRedis> {
  const executable = findRedisServer();
  if (!executable) throw new Error('redis-server is not installed (apt-get install redis-server; .ci/run installs it)');
  const server = await startRedisServer(executable, dir);
  if (fresh) await markAdmissionStoreFresh(server.url);
  return {
    ...server,
    crash: async () => {
      process.kill(server.pid, 'SIGKILL');
      await server.exited;
    },
    restart: () => startTestRedis(dir, false),
    remove: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
