/**
 * Starts the search process (dist/src/main/search.js) as a child of this one, for `npm start`,
 * the tests and the benchmark: forked with an IPC channel, resolved once it listens, stopped
 * with SIGTERM (it saves its HNSW graphs first) and waited for.
 */
import type { ChildProcess } from 'node:child_process';
import { forkUntilReady, type ForkOptions } from '../main/child-process';
import path from 'node:path';
import { SearchClient } from './search-client';

export interface SearchProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  /** A client for it (one keep-alive pool). */
  readonly client: SearchClient;
  /** Settles with how it ended (`code 1`, `signal SIGKILL`), whatever the reason. */
  readonly exited: Promise<string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export const SEARCH_ENTRY = path.join(__dirname, '..', 'main', 'search.js');

/**
 * Node's flags for the search process (the Dockerfile's and docker-compose's commands give the
 * same). A search leaves ~0.8 MB of garbage (candidates, their signals, the answer's JSON): in
 * the default young generation that is a scavenge every ~20 searches, each slowed by the
 * references into a heap of several GB at 1M names. With 64 MB semi-spaces, over 1,200 searches
 * at 1M names: 16 scavenges and 107 ms in all, against 59 and 313 ms (bench/RESULTS.md).
 * `--min-semi-space-size=64`: at that size from the start, and after the collection that gives
 * the load's garbage back once the indexes have loaded (`--expose-gc`, src/main/search.ts), which
 * would otherwise shrink it: a small young generation promotes a search's short-lived objects,
 * and the old generation's collections follow (at 1M names, 2026-12-03: 5.20–5.26 ms of CPU a
 * search and a p99 at 16 of 98–102 ms, against 6.15–6.24 and 228–235 with the collection alone;
 * bench/RESULTS.md).
 */
export const SEARCH_NODE_FLAGS = ['--max-semi-space-size=64', '--min-semi-space-size=64', '--expose-gc'];

/** `entry`: what to fork (bench:search's stand-in, bench/synthetic-search.ts, is forked the same way). */
export async function startSearchProcess(options: ForkOptions, entry = SEARCH_ENTRY): Promise<SearchProcess> {
  const started = await forkUntilReady(entry, 'the search process', { ...options, execArgv: [...SEARCH_NODE_FLAGS, ...(options.execArgv ?? [])] });
  const url = String(started.ready.url);
  const client = new SearchClient(url);
  return {
    child: started.child,
    pid: started.pid,
    url,
    client,
    exited: started.exited,
    stop: async (graceMs = 60_000) => {
      client.close();
      await started.stop(graceMs);
    },
  };
}
