/**
 * Nearest names to a query vector, over slots that come and go as the inventory changes.
 * Exact scan (dot products over every live slot) for small inventories — 4k names take ~1 ms;
 * an HNSW graph (usearch) above ANN_THRESHOLD names, updated in place (add and remove by slot)
 * and saved in the data directory so a restart loads it instead of rebuilding.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Index, MetricKind, ScalarKind } from 'usearch';
import { DIMENSIONS } from './embedder';

export const ANN_THRESHOLD = 50_000;

export interface VectorIndex {
  /** Slots of the k nearest vectors, best first. */
  nearest(query: Float32Array, k: number): number[];
  add(slot: number, vector: Float32Array): void;
  remove(slot: number): void;
  readonly size: number;
}

/** Vectors by slot: references to the embedding cache's vectors, never copies. */
export class VectorStore {
  private readonly vectors: Array<Float32Array | undefined> = [];

  get(slot: number): Float32Array {
    return this.vectors[slot]!;
  }

  set(slot: number, vector: Float32Array): void {
    this.vectors[slot] = vector;
  }

  dot(slot: number, query: Float32Array): number {
    const v = this.vectors[slot];
    if (!v) return 0;
    let dot = 0;
    for (let d = 0; d < DIMENSIONS; d++) dot += v[d] * query[d];
    return dot;
  }
}

/** Indices of the k largest values, best first (one pass with a small sorted buffer); NaN never wins. */
export function topK(values: Float32Array, k: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < values.length; i++) {
    if (!(values[i] > -Infinity)) continue;
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
  private live = new Uint8Array(1024);
  private end = 0;
  size = 0;

  constructor(private readonly store: VectorStore) {}

  /** The vector itself is read from the store. */
  add(slot: number): void {
    if (slot >= this.live.length) {
      const grown = new Uint8Array(Math.max(slot + 1, this.live.length * 2));
      grown.set(this.live);
      this.live = grown;
    }
    if (!this.live[slot]) this.size++;
    this.live[slot] = 1;
    this.end = Math.max(this.end, slot + 1);
  }

  remove(slot: number): void {
    if (this.live[slot]) this.size--;
    this.live[slot] = 0;
  }

  nearest(query: Float32Array, k: number): number[] {
    const scores = new Float32Array(this.end);
    for (let slot = 0; slot < this.end; slot++) {
      if (!this.live[slot]) {
        scores[slot] = -Infinity;
        continue;
      }
      const v = this.store.get(slot);
      let dot = 0;
      for (let d = 0; d < DIMENSIONS; d += 4) dot += v[d] * query[d] + v[d + 1] * query[d + 1] + v[d + 2] * query[d + 2] + v[d + 3] * query[d + 3];
      scores[slot] = dot;
    }
    return topK(scores, k);
  }
}

const HNSW = { connectivity: 16, expansion_add: 128, expansion_search: 128 };

/** usearch's HNSW graph keyed by slot; saved next to the names of its slots. */
export class HnswIndex implements VectorIndex {
  private constructor(private readonly index: Index) {}

  private static create(): Index {
    return new Index({ dimensions: DIMENSIONS, metric: MetricKind.IP, quantization: ScalarKind.F16, multi: false, ...HNSW });
  }

  /** Builds a graph over the given slots (all threads). */
  static build(store: VectorStore, slots: number[], log: (m: string) => void = () => undefined): HnswIndex {
    const index = HnswIndex.create();
    const started = Date.now();
    for (let at = 0; at < slots.length; at += 50_000) {
      const part = slots.slice(at, at + 50_000);
      const matrix = new Float32Array(part.length * DIMENSIONS);
      part.forEach((slot, i) => matrix.set(store.get(slot), i * DIMENSIONS));
      index.add(BigUint64Array.from(part, (s) => BigInt(s)), matrix, 0);
      if (slots.length > 50_000) log(`  HNSW ${at + part.length}/${slots.length} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    }
    return new HnswIndex(index);
  }

  /**
   * A saved graph and the names of its slots, or undefined when there is none or it does not
   * match its names file (then the caller rebuilds).
   */
  static load(file: string): { index: HnswIndex; names: Array<[string, string] | null> } | undefined {
    const namesFile = `${file}.names.json`;
    if (!existsSync(file) || !existsSync(namesFile)) return undefined;
    try {
      const { size, names } = JSON.parse(readFileSync(namesFile, 'utf8')) as { size: number; names: Array<[string, string] | null> };
      const index = HnswIndex.create();
      index.load(file);
      if (Number(index.size()) !== size) return undefined;
      return { index: new HnswIndex(index), names };
    } catch {
      return undefined;
    }
  }

  /** Saves the graph, then the names of its slots (each written aside and renamed into place). */
  save(file: string, names: Array<[string, string] | null>): void {
    mkdirSync(path.dirname(file), { recursive: true });
    this.index.save(`${file}.tmp`);
    renameSync(`${file}.tmp`, file);
    writeFileSync(`${file}.names.json.tmp`, JSON.stringify({ size: this.size, names }));
    renameSync(`${file}.names.json.tmp`, `${file}.names.json`);
  }

  get size(): number {
    return Number(this.index.size());
  }

  add(slot: number, vector: Float32Array): void {
    const key = BigInt(slot);
    if (this.index.contains(key)) this.index.remove(key);
    this.index.add(key, vector);
  }

  remove(slot: number): void {
    this.index.remove(BigInt(slot));
  }

  nearest(query: Float32Array, k: number): number[] {
    return Array.from(this.index.search(query, k, 1).keys, (key) => Number(key));
  }
}
