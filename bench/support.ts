/** What the benchmarks share. */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import type { AppDeps } from '../src/api/app';
import { markAdmissionStoreFresh } from '../src/auth/redis-admission';
import type { SecretBox } from '../src/auth/secret-box';
import { createLogger } from '../src/logger';
import { listenOnLoopback } from '../src/main/loopback';
import { findRedisServer, startRedisServer } from '../src/main/redis-server';
import { admissionParts, type AdmissionParts } from '../src/main/services';
import { QuoteTokenSigner } from '../src/orders/quote-token';

/** Serves `handler` on a free loopback port, keeping idle connections a minute (the load's connections are keep-alive). */
export async function listen(handler: http.RequestListener): Promise<{ url: string; port: number; server: http.Server }> {
  const server = http.createServer({ keepAliveTimeout: 60_000 }, handler);
  return { ...(await listenOnLoopback(server)), server };
}

export interface ProcessCpu {
  pid: number;
  ppid: number;
  /** User + system CPU seconds so far. */
  cpuSeconds: number;
  /** The command line, arguments joined by spaces ('' when unreadable). */
  cmdline: string;
}

/** A process's or thread's `stat` file (Linux): its name, its parent and its user + system CPU seconds; throws when it has ended. */
function readStat(file: string): { name: string; ppid: number; cpuSeconds: number } {
  const tick = 100; // USER_HZ on Linux
  const stat = readFileSync(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ppid: Number(fields[1]), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / tick };
}

/** This machine's processes with their CPU time, from /proc (Linux); those that end meanwhile are left out. */
export function processesCpu(): ProcessCpu[] {
  const out: ProcessCpu[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const { ppid, cpuSeconds } = readStat(`/proc/${entry}/stat`);
      let cmdline = '';
      try {
        cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      } catch {
        // ended between the two reads
      }
      out.push({ pid: Number(entry), ppid, cpuSeconds, cmdline });
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

/**
 * CPU seconds of this machine's processes, summed per group: each process counts in the first
 * group whose pattern its command line matches. Processes that ended between two readings drop
 * out, so take both readings while the groups run.
 */
export function cpuSecondsByGroup(groups: Record<string, RegExp>): Record<string, number> {
  const totals: Record<string, number> = Object.fromEntries(Object.keys(groups).map((g) => [g, 0]));
  for (const p of processesCpu()) {
    const group = Object.keys(groups).find((g) => groups[g].test(p.cmdline));
    if (group) totals[group] += p.cpuSeconds;
  }
  return totals;
}

/** CPU seconds (user + system) of each thread of a process by thread id, with its name, from /proc; empty when not readable. */
export function threadsCpuSeconds(pid: number): Map<number, { name: string; cpuSeconds: number }> {
  const threads = new Map<number, { name: string; cpuSeconds: number }>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const tid of tids) {
    try {
      const { name, cpuSeconds } = readStat(`/proc/${pid}/task/${tid}/stat`);
      threads.set(Number(tid), { name, cpuSeconds });
    } catch {
      // the thread ended meanwhile
    }
  }
  return threads;
}

/** CPU seconds of one process, from /proc; undefined without one. */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  return pid === undefined ? undefined : processesCpu().find((p) => p.pid === pid)?.cpuSeconds;
}

/** CPU seconds (user + system) of the Postgres processes under `dataDir`'s postmaster by pid, from /proc; undefined when not readable. */
export function postgresCpuSeconds(dataDir: string | undefined): Map<number, number> | undefined {
  if (!dataDir) return undefined;
  try {
    const postmaster = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return new Map(processesCpu().filter((p) => p.pid === postmaster || p.ppid === postmaster).map((p) => [p.pid, p.cpuSeconds]));
  } catch {
    return undefined;
  }
}

/** CPU seconds Postgres spent between two readings: a backend that ended meanwhile is left out, one that started counts whole. */
export function postgresCpuSpent(before: Map<number, number> | undefined, after: Map<number, number> | undefined): number | undefined {
  if (!before || !after) return undefined;
  let spent = 0;
  for (const [pid, seconds] of after) spent += seconds - (before.get(pid) ?? 0);
  return spent;
}

/**
 * The API's dependencies for a benchmark that exercises discovery only: no workflows are started
 * (a Temporal client would never be called), a throwaway quote key, a silent logger.
 */
export function discoveryAppDeps(deps: Pick<AppDeps, 'config' | 'dataSource' | 'credentials' | 'secretBox' | 'search'> & Partial<AppDeps>): AppDeps {
  return {
    workflows: { client: undefined as never, taskQueue: 'bench' },
    quoteSigner: QuoteTokenSigner.fromPem(QuoteTokenSigner.generatePem()),
    logger: createLogger('silent'),
    temporalReady: async () => undefined,
    ...deps,
  };
}

/**
 * Admission in Redis as `npm start` runs it (a redis-server of the benchmark's own, in a
 * temporary directory, with the credential and listing caches the change feed keeps current);
 * undefined where redis-server is not installed. `stop` closes the caches and the server.
 */
export async function redisAdmission(dataSource: DataSource, secretBox: SecretBox): Promise<{ parts: AdmissionParts; pid: number; stop(): Promise<void> } | undefined> {
  const executable = findRedisServer();
  if (!executable) return undefined;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-bench-redis-'));
  const redis = await startRedisServer(executable, dir);
  await markAdmissionStoreFresh(redis.url);
  const parts = await admissionParts({ redis: { url: redis.url } }, dataSource, secretBox, createLogger('silent'));
  return {
    parts,
    pid: redis.pid,
    stop: async () => {
      await parts.close();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
