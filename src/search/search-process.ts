/**
 * Starts the search process (dist/src/main/search.js) as a child of this one, for `npm start`,
 * the tests and the benchmark: forked with an IPC channel, resolved once it listens, stopped
 * with SIGTERM (it saves its HNSW graphs first) and waited for.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { SearchClient } from './search-client';

export interface SearchProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  /** A client for it (one keep-alive pool). */
  readonly client: SearchClient;
  /** Settles with the exit code when the process has exited, whatever the reason. */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export const SEARCH_ENTRY = path.join(__dirname, '..', 'main', 'search.js');

export async function startSearchProcess(options: {
  /** The child's whole environment (its configuration: DATABASE_URL, SEARCH_URL, DATA_DIR, …). */
  env: NodeJS.ProcessEnv;
  /** Where its output goes: inherited (npm start) or handed to a function line by line. */
  output?: 'inherit' | ((line: string) => void);
  timeoutMs?: number;
}): Promise<SearchProcess> {
  const output = options.output ?? 'inherit';
  const child = fork(SEARCH_ENTRY, [], { env: options.env, stdio: output === 'inherit' ? ['ignore', 'inherit', 'inherit', 'ipc'] : ['ignore', 'pipe', 'pipe', 'ipc'] });
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
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the search process did not start within ${options.timeoutMs} ms`)), options.timeoutMs ?? 30 * 60_000);
    child.on('message', (message: { type?: string; url?: string }) => {
      if (message?.type !== 'ready') return;
      clearTimeout(timer);
      resolve(message.url!);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the search process exited (${code}) before it was ready`));
    });
  });
  let url: string;
  try {
    url = await ready;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const client = new SearchClient(url);
  return {
    child,
    pid: child.pid!,
    url,
    client,
    exited,
    stop: async (graceMs = 60_000) => {
      client.close();
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
