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

/**
 * glibc's tunable for the search process (the Dockerfile's search image sets it too, and so
 * docker-compose's search service): its allocations of a few MiB and more, the vectors' blocks and the keyword index's typed
 * arrays (~1.2 GiB at 1M names), asked for as transparent huge pages (`madvise`, which a kernel
 * whose THP mode is `madvise` or `always` honours; a libc without the tunable ignores it). A
 * search reads a few hundred vectors from all over them: with 4 KiB pages nearly each is a TLB
 * miss as well as a cache miss. At 1M names, alternated in one sitting on 2026-12-03: 5.4–6.6 ms
 * of CPU a search one at a time against 6.3–7.5 without it, for ~60–100 MiB more RSS (pages
 * rounded up to 2 MiB). V8's own heap and the graph's mapped file are not affected.
 */
export const SEARCH_GLIBC_TUNABLE = 'glibc.malloc.hugetlb=1';

/** `env` with SEARCH_GLIBC_TUNABLE added to any GLIBC_TUNABLES it has (one it sets itself wins). */
export function withHugePages(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const own = env.GLIBC_TUNABLES;
  if (own?.split(':').some((t) => t.startsWith('glibc.malloc.hugetlb='))) return env;
  return { ...env, GLIBC_TUNABLES: own ? `${own}:${SEARCH_GLIBC_TUNABLE}` : SEARCH_GLIBC_TUNABLE };
}

/** `entry`: what to fork (bench:search's stand-in, bench/synthetic-search.ts, is forked the same way). */
export async function startSearchProcess(options: ForkOptions, entry = SEARCH_ENTRY): Promise<SearchProcess> {
  const started = await forkUntilReady(entry, 'the search process', { ...options, env: withHugePages(options.env), execArgv: [...SEARCH_NODE_FLAGS, ...(options.execArgv ?? [])] });
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
