/**
 * The HNSW graph's parameters, shared by the API thread (which loads and updates graphs) and the
 * build worker (which builds and saves them); imports usearch only, so the worker loads no model.
 */
import { Index, MetricKind, ScalarKind } from 'usearch';

/** Graph degree and build breadth; searches look wider (256), for recall@5 ≈ 0.98 at 1M names (bench:ann). */
export const HNSW = { connectivity: 16, expansion_add: 128, expansion_search: 256 };

export function createHnsw(dimensions: number): Index {
  return new Index({ dimensions, metric: MetricKind.IP, quantization: ScalarKind.F16, multi: false, ...HNSW });
}

/** API thread → build worker. */
export type BuildRequest =
  | { type: 'add'; keys: BigUint64Array; vectors: Float32Array }
  | { type: 'save'; file: string };

/** Build worker → API thread. */
export type BuildReply =
  | { type: 'added'; size: number }
  | { type: 'saved'; file: string; size: number }
  | { type: 'error'; message: string };
