/**
 * The HNSW graph's parameters and the messages of the two graph workers, shared by the search
 * process's main thread and those workers: the build worker (which builds, updates and saves
 * graphs) and the search worker (which maps the graph in use read-only and searches it); imports
 * usearch only, so neither worker loads a model.
 */
import { Index, MetricKind, ScalarKind } from 'usearch';

/**
 * Graph degree and build breadth, and a search's breadth unless it asks for another (usearch
 * keeps max(expansion_search, k) entries in view, so a search asks for max(k, breadth) and keeps k).
 * The graph holds int8 copies of the vectors (half the bytes of f16 copies, and a search at 1M
 * names is bound by reading them) at degree 32: a search asks it for GRAPH_OVERSAMPLE × k names and
 * their float vectors pick the k nearest. Over 200,000 of the live names (a throwaway script,
 * recall@50 against the exact scan, one hour): f16 at degree 16, breadth 256: 0.953 in 2.40 ms;
 * int8 at degree 32, breadth 128: 0.955 in 1.10 ms, breadth 256: 0.979 in 2.06 ms. At 1M names
 * (bench:ann) breadth 128 finds what f16 at degree 16 found at 256 (recall@5 0.980, @50 0.962
 * against 0.953): the query's own search keeps the default breadth (its definitions' is
 * narrower: GLOSS_BREADTH in hybrid-search.ts).
 */
export const HNSW = { connectivity: 32, expansion_add: 128, expansion_search: 128 };
export const GRAPH_OVERSAMPLE = 2;
/** How the graph is made, in its file's name: a graph saved another way is built again, never mapped as this one. */
export const GRAPH_FORMAT = `i8-m${HNSW.connectivity}`;

/**
 * The narrowest breadth a search may ask for. usearch keeps max(expansion_search, k) entries in
 * view, so the search worker maps the graph with this as its expansion_search and each request
 * sets its own breadth through k: below HNSW.expansion_search too.
 */
export const MIN_SEARCH_BREADTH = 16;

/** An empty graph to build, load or map; `expansionSearch`: the search worker's MIN_SEARCH_BREADTH. */
export function createHnsw(dimensions: number, expansionSearch = HNSW.expansion_search): Index {
  return new Index({ dimensions, metric: MetricKind.IP, quantization: ScalarKind.I8, multi: false, ...HNSW, expansion_search: expansionSearch });
}

/** Search process's main thread → build worker, in this order: `load` (optional), `remove`, `add`s, `save`. */
export type BuildRequest =
  /** Start from the saved graph of `file` (its names file must name `graph`). */
  | { type: 'load'; file: string; graph: string }
  /** Take these slots out (their names too); slots, not usearch's bigint keys, so that the main thread makes no BigInt per slot (10,000: up to 4.5 ms). */
  | { type: 'remove'; slots: Uint32Array }
  /**
   * Add these slots' vectors (a chunk), with their names: per slot its name and segmented label
   * joined by a tab, the slots' joined by newlines. The keys and vectors are in memory shared
   * with the main thread, which fills it with the next chunk once this one is answered.
   */
  | { type: 'add'; keys: BigUint64Array; vectors: Float32Array; names: string }
  /** Save the graph under a new name of `file`, then the names file that names it; leave the graph file `keep` (the one in use) in place. */
  | { type: 'save'; file: string; keep?: string };

/** Graph worker → main thread. */
export type BuildReply =
  | { type: 'done'; size: number }
  /** `members[slot]` is 1 for each slot the saved graph holds. */
  | { type: 'saved'; graph: string; size: number; members: Uint8Array }
  | { type: 'error'; message: string };

/** One search of the graph: the `k` nearest keys to `query`. */
export interface GraphSearch {
  id: number;
  query: Float32Array;
  k: number;
  /** Entries kept in view (at least MIN_SEARCH_BREADTH). */
  breadth: number;
}

/**
 * Main thread → search worker: searches asked together (a query's and its definitions'), in one
 * message and answered in one (each message costs both threads ~50 µs).
 */
export interface SearchRequest {
  searches: GraphSearch[];
}

/** A search's answer: its keys, or why it failed. */
export type GraphAnswer = { id: number; keys: Uint32Array } | { id: number; error: string };

/** Search worker → main thread: first `viewed` once the graph is mapped (or `error`), then one `found` per request. */
export type SearchReply = { type: 'viewed'; size: number } | { type: 'found'; answers: GraphAnswer[] } | { type: 'error'; message: string };
