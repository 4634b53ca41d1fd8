/**
 * The HNSW graph's parameters and the graph worker's messages, shared by the search process's main
 * thread (which opens saved graphs read-only and searches them) and the graph worker (which builds,
 * updates and saves them); imports usearch only, so the worker loads no model.
 */
import { Index, MetricKind, ScalarKind } from 'usearch';

/** Graph degree and build breadth; searches look wider (256), for recall@5 ≈ 0.98 at 1M names (bench:ann). */
export const HNSW = { connectivity: 16, expansion_add: 128, expansion_search: 256 };

export function createHnsw(dimensions: number): Index {
  return new Index({ dimensions, metric: MetricKind.IP, quantization: ScalarKind.F16, multi: false, ...HNSW });
}

/** Search process's main thread → graph worker, in this order: `load` (optional), `remove`, `add`s, `save`. */
export type BuildRequest =
  /** Start from the saved graph of `file` (its names file must name `graph`). */
  | { type: 'load'; file: string; graph: string }
  /** Take these slots out (their names too). */
  | { type: 'remove'; keys: BigUint64Array }
  /**
   * Add these slots' vectors (a chunk), with their names (slot's name and segmented label). The
   * keys and vectors are in memory shared with the main thread, which fills it with the next
   * chunk once this one is answered.
   */
  | { type: 'add'; keys: BigUint64Array; vectors: Float32Array; names: Array<[string, string]> }
  /** Save the graph under a new name of `file`, then the names file that names it. */
  | { type: 'save'; file: string };

/** Graph worker → main thread. */
export type BuildReply =
  | { type: 'done'; size: number }
  | { type: 'saved'; graph: string; size: number }
  | { type: 'error'; message: string };
