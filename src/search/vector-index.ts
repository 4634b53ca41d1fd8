/**
 * Nearest names to a query vector. Exact scan (dot products over every vector) for small
 * inventories — 4k names take ~1 ms; an HNSW graph (usearch) above ANN_THRESHOLD names, saved in
 * the data directory next to the embeddings so a restart loads it instead of rebuilding.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Index, MetricKind, ScalarKind } from 'usearch';
import { DIMENSIONS } from './embedder';

export const ANN_THRESHOLD = 50_000;

export interface VectorIndex {
  /** Row indices of the k nearest vectors, best first. */
  nearest(query: Float32Array, k: number): number[];
}

/** Dot product of `query` with each of the `n` vectors laid out one after another. */
export function dotAll(vectors: Float32Array, query: Float32Array, n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0, base = 0; i < n; i++, base += DIMENSIONS) {
    let dot = 0;
    for (let d = 0; d < DIMENSIONS; d += 4) {
      dot += vectors[base + d] * query[d] + vectors[base + d + 1] * query[d + 1] + vectors[base + d + 2] * query[d + 2] + vectors[base + d + 3] * query[d + 3];
    }
    out[i] = dot;
  }
  return out;
}

/** Indices of the k largest values, best first (one pass with a small sorted buffer). */
export function topK(values: Float32Array, k: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < values.length; i++) {
    if (best.length === k && values[i] <= values[best[k - 1]]) continue;
    let at = best.length === k ? k - 1 : best.length;
    if (best.length < k) best.push(i);
    while (at > 0 && values[best[at - 1]] < values[i]) {
      best[at] = best[at - 1];
      at--;
    }
    best[at] = i;
  }
  return best;
}

export class ExactIndex implements VectorIndex {
  constructor(
    private readonly vectors: Float32Array,
    private readonly n: number,
  ) {}

  nearest(query: Float32Array, k: number): number[] {
    return topK(dotAll(this.vectors, query, this.n), k);
  }
}

const HNSW = { connectivity: 16, expansion_add: 128, expansion_search: 128 };

export class HnswIndex implements VectorIndex {
  private constructor(private readonly index: Index) {}

  /** Loads `file` when it exists (built for the same rows), else builds from the vectors and saves it there. */
  static open(vectors: Float32Array, n: number, file?: string, log: (m: string) => void = () => undefined): HnswIndex {
    const index = new Index({ dimensions: DIMENSIONS, metric: MetricKind.IP, quantization: ScalarKind.F32, multi: false, ...HNSW });
    if (file && existsSync(file)) {
      index.load(file);
      if (Number(index.size()) === n) return new HnswIndex(index);
      log(`vector index ${file} is stale; rebuilding`);
    }
    log(`building the HNSW vector index over ${n} names…`);
    const keys = BigUint64Array.from({ length: n }, (_, i) => BigInt(i));
    index.add(keys, vectors.subarray(0, n * DIMENSIONS), 0);
    if (file) {
      mkdirSync(path.dirname(file), { recursive: true });
      index.save(file);
    }
    return new HnswIndex(index);
  }

  nearest(query: Float32Array, k: number): number[] {
    return Array.from(this.index.search(query, k, 1).keys, (key) => Number(key));
  }
}
