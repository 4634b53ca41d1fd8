/**
 * The benchmarks' load, from a child process (this file, forked), so that the CPU a benchmark
 * measures in its own process is the API's, not the client's: keep-alive connections, each
 * request signed as a partner's client signs it (when a credential is given), only 200 answers
 * timed. The child's own CPU per measured request (signing, HTTP client) comes back with its
 * figures.
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import { PartnerClient } from '../src/client/partner-client';

/** What a benchmark asks the load child to do. */
export interface LoadJob {
  baseUrl: string;
  credential?: { keyId: string; secret: string };
  /** Requested in turn (path and query), round and round. */
  paths: string[];
  requests: number;
  /** Requests sent first and counted in no figure (JIT, pooled connections, caches). */
  warmup: number;
  concurrency: number;
}

export interface LoadResult {
  /** CPU ms (user + system) of the load child per measured request: signing and the HTTP client. */
  clientCpuMsPerRequest: number;
  ok: number;
  /** Answers other than 200, by status. */
  other: Record<string, number>;
  seconds: number;
  p50: number;
  p99: number;
}

async function runLoad(job: LoadJob): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
  const client = job.credential ? new PartnerClient(job.baseUrl, job.credential) : undefined;
  const base = new URL(job.baseUrl);
  const once = (pathAndQuery: string) =>
    new Promise<number>((resolve, reject) => {
      const headers = client ? client.signHeaders('GET', pathAndQuery) : {};
      const req = http.request({ host: base.hostname, port: base.port, path: pathAndQuery, method: 'GET', agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
  const phase = async (count: number, latencies?: number[], statuses?: Record<string, number>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (next < count) {
          const i = next++;
          const t = process.hrtime.bigint();
          const status = await once(job.paths[i % job.paths.length]);
          if (statuses) statuses[status] = (statuses[status] ?? 0) + 1;
          if (latencies && status === 200) latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
        }
      }),
    );
  };
  await phase(job.warmup);
  // The parent samples CPU from here: the warm-up is not counted.
  await new Promise<void>((resolve) => process.send!({ measuring: true }, () => resolve()));
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  await phase(job.requests, latencies, statuses);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const { 200: ok = 0, ...other } = statuses;
  return { clientCpuMsPerRequest: (used.user + used.system) / 1000 / job.requests, ok, other, seconds, p50: latencies[Math.floor(latencies.length * 0.5)] ?? NaN, p99: latencies[Math.floor(latencies.length * 0.99)] ?? NaN };
}

/** Runs `job` in a forked load child; `onMeasuring` is called when its warm-up is over and the measured requests start. */
export function loadInChild(job: LoadJob, onMeasuring: () => void = () => undefined): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(__filename, ['--load'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', (m) => ((m as { measuring?: boolean }).measuring ? onMeasuring() : resolve(m as LoadResult)));
    child.once('error', reject);
    child.once('exit', (code, signal) => code !== 0 && reject(new Error(`load child ${signal ? `killed by ${signal}` : `exited with ${code}`}`)));
    child.send(job);
  });
}

if (require.main === module && process.argv.includes('--load')) {
  process.once('message', (job) => {
    runLoad(job as LoadJob).then(
      (result) => process.send!(result, () => process.exit(0)),
      (err) => {
        process.stderr.write(`load: ${(err as Error).stack ?? err}\n`);
        process.exit(1);
      },
    );
  });
}
