/**
 * Nearest names to a query vector, over slots that come and go as the inventory changes.
 * Exact search (SIMD brute force) for small inventories;
 * an HNSW graph (usearch) above ANN_THRESHOLD names, updated in place (add and remove by slot)
 * and saved in the data directory so a restart loads it instead of rebuilding.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { exactSearch, Index, MetricKind, type Matches } from 'usearch';
import { cosine, DIMENSIONS } from './embedder';
import { createHnsw, type BuildReply, type BuildRequest } from './hnsw';

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
    return v ? cosine(v, query) : 0;
  }
}

/**
 * Exact nearest neighbours: usearch's SIMD brute force over a contiguous copy of the live
 * vectors, kept up to date a row at a time (a vector is copied when its slot is added; a removed
 * row takes the last one), so that no search after a change copies them all again.
 */
export class ExactIndex implements VectorIndex {
  private readonly rowOf = new Map<number, number>();
  private readonly rows: number[] = [];
  private matrix = new Float32Array(0);

  constructor(private readonly store: VectorStore) {}

  get size(): number {
    return this.rows.length;
  }

  /** The vector itself is read from the store (now: set it there first). */
  add(slot: number): void {
    let row = this.rowOf.get(slot);
    if (row === undefined) {
      row = this.rows.length;
      if ((row + 1) * DIMENSIONS > this.matrix.length) {
        const grown = new Float32Array(Math.max(1024, 2 * row) * DIMENSIONS);
        grown.set(this.matrix);
        this.matrix = grown;
      }
      this.rows.push(slot);
      this.rowOf.set(slot, row);
    }
    this.matrix.set(this.store.get(slot), row * DIMENSIONS);
  }

  remove(slot: number): void {
    const row = this.rowOf.get(slot);
    if (row === undefined) return;
    const last = this.rows.length - 1;
    if (row !== last) {
      const moved = this.rows[last];
      this.matrix.copyWithin(row * DIMENSIONS, last * DIMENSIONS, (last + 1) * DIMENSIONS);
      this.rows[row] = moved;
      this.rowOf.set(moved, row);
    }
    this.rows.pop();
    this.rowOf.delete(slot);
  }

  nearest(query: Float32Array, k: number): number[] {
    const n = this.rows.length;
    if (n === 0) return [];
    const found = exactSearch(this.matrix.subarray(0, n * DIMENSIONS), query, DIMENSIONS, Math.min(k, n), MetricKind.IP, 1) as Matches;
    return Array.from(found.keys, (row) => this.rows[Number(row)]);
  }
}

/** Vectors copied and handed to the build worker at a time (3 MB: a few ms of the event loop each). */
const BUILD_CHUNK = 2_000;

/** usearch's HNSW graph keyed by slot; saved next to the names of its slots. */
export class HnswIndex implements VectorIndex {
  private constructor(private readonly index: Index) {}

  private static create(): Index {
    return createHnsw(DIMENSIONS);
  }

  /** Builds a graph over the given slots (all threads), on the calling thread: it blocks it meanwhile. */
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
   * Builds a graph over the given slots and vectors in a worker thread, which saves it to `graph`;
   * this thread only copies the vectors into the worker's chunks (one chunk per turn of the event
   * loop) and then loads the file (usearch `load`: tens of ms at 60k names; `view` would be
   * faster but maps the file read-only, and the graph is updated in place).
   */
  static async buildInWorker(vectors: Float32Array[], slots: number[], graph: string, log: (m: string) => void = () => undefined): Promise<HnswIndex> {
    mkdirSync(path.dirname(graph), { recursive: true });
    const worker = new Worker(path.join(__dirname, 'hnsw-build-worker.js'), { workerData: { dimensions: DIMENSIONS } });
    let pending: { resolve: (r: BuildReply) => void; reject: (e: Error) => void } | undefined;
    const fail = (err: Error) => {
      pending?.reject(err);
      pending = undefined;
    };
    worker.on('message', (reply: BuildReply) => {
      const waiting = pending;
      pending = undefined;
      if (reply.type === 'error') waiting?.reject(new Error(`HNSW build worker: ${reply.message}`));
      else waiting?.resolve(reply);
    });
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`HNSW build worker exited (${code})`)));
    const ask = (request: BuildRequest, transfer: ArrayBuffer[] = []) =>
      new Promise<BuildReply>((resolve, reject) => {
        pending = { resolve, reject };
        worker.postMessage(request, transfer);
      });
    const started = Date.now();
    try {
      for (let at = 0; at < slots.length; at += BUILD_CHUNK) {
        const part = slots.slice(at, at + BUILD_CHUNK);
        const matrix = new Float32Array(part.length * DIMENSIONS);
        part.forEach((_, i) => matrix.set(vectors[at + i], i * DIMENSIONS));
        const keys = BigUint64Array.from(part, (s) => BigInt(s));
        await ask({ type: 'add', keys, vectors: matrix }, [keys.buffer as ArrayBuffer, matrix.buffer as ArrayBuffer]);
        const done = at + part.length;
        if (slots.length > 50_000 && (done % 50_000 < BUILD_CHUNK || done === slots.length)) log(`  HNSW ${done}/${slots.length} (${((Date.now() - started) / 1000).toFixed(0)} s, off the event loop)`);
      }
      await ask({ type: 'save', file: graph });
    } finally {
      worker.removeAllListeners('exit');
      await worker.terminate();
    }
    const index = HnswIndex.create();
    index.load(graph);
    return new HnswIndex(index);
  }

  /**
   * A saved graph and the names of its slots, or undefined when there is none or it does not
   * match its names file (then the caller rebuilds).
   */
  static load(file: string): { index: HnswIndex; names: Array<[string, string] | null> } | undefined {
    const namesFile = `${file}.names.json`;
    if (!existsSync(namesFile)) return undefined;
    try {
      const saved = JSON.parse(readFileSync(namesFile, 'utf8')) as { size: number; graph?: string; names: Array<[string, string] | null> };
      const graph = path.join(path.dirname(file), saved.graph ?? path.basename(file));
      if (!existsSync(graph)) return undefined;
      const index = HnswIndex.create();
      index.load(graph);
      if (Number(index.size()) !== saved.size) return undefined;
      return { index: new HnswIndex(index), names: saved.names };
    } catch {
      return undefined;
    }
  }

  /**
   * Saves the graph under a new name, then the names of its slots, which name that graph (written
   * aside and renamed into place), then removes older graphs: a crash at any point leaves a names
   * file and the very graph it was written with.
   */
  save(file: string, names: Array<[string, string] | null>): void {
    const graph = HnswIndex.newGraphFile(file);
    this.index.save(graph);
    HnswIndex.commit(file, graph, this.size, names);
  }

  /** A new file name for a graph of `file` (in its directory, which is made). */
  static newGraphFile(file: string): string {
    mkdirSync(path.dirname(file), { recursive: true });
    return `${file}.${Date.now().toString(36)}`;
  }

  /**
   * Writes the names of a saved graph's slots, naming that graph (aside, then renamed into place),
   * then removes the older graphs of `file`.
   */
  static commit(file: string, graphFile: string, size: number, names: Array<[string, string] | null>): void {
    const dir = path.dirname(file);
    const graph = path.basename(graphFile);
    writeFileSync(`${file}.names.json.tmp`, JSON.stringify({ size, graph, names }));
    renameSync(`${file}.names.json.tmp`, `${file}.names.json`);
    for (const old of readdirSync(dir)) {
      if ((old === path.basename(file) || old.startsWith(`${path.basename(file)}.`)) && old !== graph && !old.startsWith(`${path.basename(file)}.names.json`)) rmSync(path.join(dir, old), { force: true });
    }
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
