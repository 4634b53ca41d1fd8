/**
 * Nearest names to a query vector, over slots that come and go as the inventory changes.
 * Exact search (SIMD brute force) for small inventories;
 * an HNSW graph (usearch) above SEARCH_ANN_THRESHOLD names, written by a worker thread into the data
 * directory and mapped read-only and searched by another, with the changes since searched exactly
 * beside it; a restart maps the saved graph instead of rebuilding.
 */
import { grown } from './typed-arrays';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { exactSearch, MetricKind, type Matches } from 'usearch';
import { DIMENSIONS } from './embedder';
import { VectorRows, type QueryHandle } from './vector-rows';
import { membersOf, readNames, type SlotNames } from './graph-files';
import { LoopSlice } from './loop-slice';
import { GRAPH_OVERSAMPLE, HNSW, type BuildReply, type BuildRequest, type GraphSearch, type SearchReply, type SearchRequest } from './hnsw';

/** One `nearest` of several asked together (VectorIndex.nearestEach). */
export interface Nearest {
  query: Float32Array;
  k: number;
  breadth?: number;
  scores?: Map<number, number>;
}

export interface VectorIndex {
  /**
   * Slots of the k nearest vectors, best first (the exact index answers at once, the graph from
   * its worker); `breadth`: how wide an approximate index looks (HNSW's default when left out);
   * `scores`: given, the dot product with `query` (which the index computed anyway) of each vector
   * answered is set there by the vector's number in the slab (VectorStore.refOf), so that the
   * caller does not read it again; a slot another name has taken since has another number, or
   * the same one for the same text (the same vector).
   */
  nearest(query: Float32Array, k: number, breadth?: number, scores?: Map<number, number>): number[] | Promise<number[]>;
  /** `nearest` for each request, asked together (the graph's worker gets them in one message). */
  nearestEach(requests: Nearest[]): number[][] | Promise<number[][]>;
  /** Takes the slot's vector as the store holds it now (set it there first). */
  add(slot: number): void;
  remove(slot: number): void;
  readonly size: number;
}

/**
 * Vectors by slot: the numbers of the embedding cache's vectors (VectorRows, int16), never
 * copies; 4 bytes a slot. A vector given as an array (no cache: tests, benchmarks) is added to
 * the store's own slab.
 */
export class VectorStore {
  /** The slab vector of each slot, -1 for none. */
  private refs = new Int32Array(0);

  constructor(readonly slab: VectorRows = new VectorRows()) {}

  /** The number of the slot's vector in the slab (-1 for none): a number is never given to another vector (the cache gives names of one text the same one). */
  refOf(slot: number): number {
    return slot < this.refs.length ? this.refs[slot] : -1;
  }

  has(slot: number): boolean {
    return this.refOf(slot) >= 0;
  }

  /** The slot's vector as float32 (into `into`, else a new array). */
  get(slot: number, into?: Float32Array): Float32Array {
    const ref = this.refOf(slot);
    if (ref < 0) throw new Error(`slot ${slot} has no vector`);
    return this.slab.read(ref, into);
  }

  /** `vector`: the number of a vector in the slab (the cache's), or a vector to add to it. */
  set(slot: number, vector: number | Float32Array): void {
    if (slot >= this.refs.length) {
      this.refs = grown(this.refs, Math.max(slot + 1, this.refs.length * 2, 1024), -1);
    }
    this.refs[slot] = typeof vector === 'number' ? vector : this.slab.add(vector);
  }

  /** The slot's name left the index: its vector goes (a slot taken again waits for its own). */
  clear(slot: number): void {
    if (slot < this.refs.length) this.refs[slot] = -1;
  }

  /** The query copied in for `dot` (VectorRows.query: use it with no await between). */
  query(vector: Float32Array): QueryHandle {
    return this.slab.query(vector);
  }

  /** The cosine of the slot's vector and the query, 0 when it has none. */
  dot(slot: number, query: QueryHandle): number {
    const ref = this.refOf(slot);
    return ref < 0 ? 0 : this.slab.dot(ref, query);
  }
}

/** The slots of `best` (each with its dot product with the query, best first), each dot product set in `scores` by its vector's number (VectorIndex.nearest). */
function answered(best: ReadonlyArray<readonly [number, number]>, store: VectorStore, scores?: Map<number, number>): number[] {
  return best.map(([slot, score]) => {
    scores?.set(store.refOf(slot), score);
    return slot;
  });
}

/** Rows per block of the exact index (1.5 MB of int8): a new block is allocated, never a larger copy of all. */
const BLOCK_ROWS = 4_096;
/**
 * A component's int8 step in the exact index's rows (1/254): a unit vector's components within
 * ±0.5 are kept to ±0.002, the rare larger one clamped; the scan only picks candidates, which are
 * then scored on their float vectors.
 */
const INT8_SCALE = 254;
/** The int8 scan's best OVERSAMPLE × k (and at least k + MARGIN) are scored again on the store's (int16) vectors, and the best k kept. */
const OVERSAMPLE = 2;
const MARGIN = 40;

/** Where a slot's vector is read to be copied (the index never waits between reading and using it). */
const READ_SCRATCH = new Float32Array(DIMENSIONS);

/** `vector` in int8 steps of 1/INT8_SCALE, into `into` at `offset`. */
export function toInt8(vector: Float32Array, into: Int8Array = new Int8Array(DIMENSIONS), offset = 0): Int8Array {
  for (let i = 0; i < DIMENSIONS; i++) into[offset + i] = Math.max(-127, Math.min(127, Math.round(vector[i] * INT8_SCALE)));
  return into;
}

/**
 * Exact nearest neighbours: usearch's SIMD brute force over contiguous int8 copies of the live
 * vectors (a quarter of the memory a float scan reads, which is what bounds it: 0.15 against
 * 0.45 ms over 3,612 rows), whose best OVERSAMPLE × k (at least k + MARGIN) are scored again on
 * the store's vectors (int16, VectorRows). The answer is the float scan's (bench:ann measures it against one; a tight
 * cluster of names is tested) but where names so alike that the int8 rounding reorders them by more
 * than the margin tie with the k-th. Rows are kept in blocks of BLOCK_ROWS, up to date a row at a
 * time (a vector is copied when its slot is added; a removed row takes the last one), so that no
 * search after a change copies them all again, and no add does either (a matrix doubled when full
 * copied every row in one turn: 8–13 ms at 8,192 rows, ~30–50 ms at 32,768).
 */
export class ExactIndex implements VectorIndex {
  private readonly rowOf = new Map<number, number>();
  private readonly rows: number[] = [];
  private readonly blocks: Int8Array[] = [];

  constructor(private readonly store: VectorStore) {}

  get size(): number {
    return this.rows.length;
  }

  /** The slots it holds. */
  get slots(): readonly number[] {
    return this.rows;
  }

  /** Where a row's vector is: its block and its offset there. */
  private at(row: number): [Int8Array, number] {
    return [this.blocks[Math.floor(row / BLOCK_ROWS)], (row % BLOCK_ROWS) * DIMENSIONS];
  }

  /** The vector itself is read from the store (now: set it there first). */
  add(slot: number): void {
    let row = this.rowOf.get(slot);
    if (row === undefined) {
      row = this.rows.length;
      if (row === this.blocks.length * BLOCK_ROWS) this.blocks.push(new Int8Array(BLOCK_ROWS * DIMENSIONS));
      this.rows.push(slot);
      this.rowOf.set(slot, row);
    }
    const [block, offset] = this.at(row);
    toInt8(this.store.get(slot, READ_SCRATCH), block, offset);
  }

  remove(slot: number): void {
    const row = this.rowOf.get(slot);
    if (row === undefined) return;
    const last = this.rows.length - 1;
    if (row !== last) {
      const moved = this.rows[last];
      const [to, at] = this.at(row);
      const [from, offset] = this.at(last);
      to.set(from.subarray(offset, offset + DIMENSIONS), at);
      this.rows[row] = moved;
      this.rowOf.set(moved, row);
    }
    this.rows.pop();
    this.rowOf.delete(slot);
    // A block left empty goes (the one before it is full).
    if (this.rows.length <= (this.blocks.length - 1) * BLOCK_ROWS) this.blocks.pop();
  }

  nearestEach(requests: Nearest[]): number[][] {
    return requests.map(({ query, k, breadth, scores }) => this.nearest(query, k, breadth, scores));
  }

  nearest(query: Float32Array, k: number, _breadth?: number, scores?: Map<number, number>): number[] {
    const n = this.rows.length;
    if (n === 0) return [];
    const want = Math.min(n, Math.max(k * OVERSAMPLE, k + MARGIN));
    const asInt8 = toInt8(query);
    // Each block's best by the int8 scan (usearch's distance: the lower the nearer), then the best
    // of those scored on their float vectors.
    let picked: Array<[number, number]> = [];
    this.blocks.forEach((block, b) => {
      const rows = Math.min(BLOCK_ROWS, n - b * BLOCK_ROWS);
      const matches = exactSearch(block.subarray(0, rows * DIMENSIONS), asInt8, DIMENSIONS, Math.min(want, rows), MetricKind.IP, 1) as Matches;
      matches.keys.forEach((row, i) => picked.push([this.rows[b * BLOCK_ROWS + Number(row)], matches.distances[i]]));
    });
    if (this.blocks.length > 1) picked = picked.sort((x, y) => x[1] - y[1]).slice(0, want);
    const handle = this.store.query(query);
    const best = picked
      .map(([slot]): [number, number] => [slot, this.store.dot(slot, handle)])
      .sort((x, y) => y[1] - x[1])
      .slice(0, k);
    return answered(best, this.store, scores);
  }
}

/** Vectors handed to the graph worker at a time (3 MB; filling one took 1.4–4.8 ms of the event loop). */
const BUILD_CHUNK = 2_000;
/** The event loop's longest run filling a chunk for the graph worker before it lets other work in. */
const FILL_SLICE_MS = 1.5;

/**
 * What the graph worker writes: a new graph, or the saved `base` with the changes since. The
 * slots to add are read in turns of the event loop of FILL_SLICE_MS at most (HnswIndex.write).
 */
export interface GraphChanges {
  /** The saved graph to start from (the names file of the same `file` names it); none: a new graph. */
  base?: string;
  /** The graph file in use, left in place by the save (its owner removes it once the new one is in use). */
  keep?: string;
  /** Slots to take out of the base graph (those re-added too). */
  removed: number[];
  /** Slots to add, if `read` finds a vector for them; iterated lazily. */
  slots: Iterable<number>;
  /** About how many of `slots` have a vector (for the progress log). */
  count: number;
  /** A slot's vector and name (name, segmented label) as they are when it is read, if it has a vector (InventoryIndex.graphSlots says why that is safe); the vector is copied before the next read. */
  read(slot: number): { vector: Float32Array; name: [string, string] } | undefined;
}

/**
 * The search worker of one saved graph (hnsw-search-worker.ts): maps it, then answers searches in
 * the order asked.
 */
class GraphSearcher {
  private readonly waiting = new Map<number, { resolve: (keys: Uint32Array) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  /** Kept: a worker that failed fails every later search at once. */
  private failed: Error | undefined;

  private constructor(private readonly worker: Worker) {}

  /** Whether its worker has failed or been closed (every search fails). */
  get broken(): boolean {
    return this.failed !== undefined;
  }

  /** Starts the worker and waits until it has mapped `file`; its size is the graph's. */
  static open(file: string): Promise<{ searcher: GraphSearcher; size: number }> {
    const worker = new Worker(path.join(__dirname, 'hnsw-search-worker.js'), { workerData: { dimensions: DIMENSIONS, file } });
    const searcher = new GraphSearcher(worker);
    return new Promise((resolve, reject) => {
      // The mapping waits as id -1, so that a worker failing first rejects it (fail).
      searcher.waiting.set(-1, { resolve: () => undefined, reject });
      worker.on('message', (reply: SearchReply) => {
        if (reply.type === 'found') {
          for (const answer of reply.answers) {
            const waiter = searcher.waiting.get(answer.id);
            searcher.waiting.delete(answer.id);
            if ('keys' in answer) waiter?.resolve(answer.keys);
            else waiter?.reject(new Error(`HNSW search worker: ${answer.error}`));
          }
          if (searcher.waiting.size === 0) worker.unref();
          return;
        }
        searcher.waiting.delete(-1);
        if (reply.type === 'viewed') {
          // From now on only a search under way keeps the process alive for the worker (search
          // refs it, the answer that leaves none waiting unrefs it).
          worker.unref();
          resolve({ searcher, size: reply.size });
        } else {
          reject(new Error(`HNSW search worker: ${reply.message}`));
          // A graph it could not map: the worker has nothing to answer.
          void worker.terminate();
        }
      });
      worker.on('error', (err) => searcher.fail(err));
      worker.on('exit', (code) => searcher.fail(new Error(`HNSW search worker exited (${code})`)));
    });
  }

  /**
   * For each search, the keys of the `k` graph entries nearest `query`, best first, `breadth`
   * entries kept in view: all asked in one message.
   */
  searchEach(searches: Array<Omit<GraphSearch, 'id'>>): Array<Promise<Uint32Array>> {
    const failed = this.failed;
    if (failed) return searches.map(() => Promise.reject(failed));
    if (searches.length === 0) return [];
    if (this.waiting.size === 0) this.worker.ref();
    const asked = searches.map((search) => ({ id: this.nextId++, ...search }));
    const answers = asked.map(({ id }) => new Promise<Uint32Array>((resolve, reject) => this.waiting.set(id, { resolve, reject })));
    this.worker.postMessage({ searches: asked } satisfies SearchRequest);
    return answers;
  }

  /** The keys of the `k` graph entries nearest `query`, best first, `breadth` entries kept in view. */
  search(query: Float32Array, k: number, breadth: number): Promise<Uint32Array> {
    return this.searchEach([{ query, k, breadth }])[0];
  }

  /** Ends the worker; a search asked afterwards fails. */
  close(): void {
    this.fail(new Error('HNSW search worker closed'));
    this.worker.removeAllListeners('exit');
    void this.worker.terminate();
  }

  private fail(err: Error): void {
    this.failed ??= err;
    for (const waiter of this.waiting.values()) waiter.reject(err);
    this.waiting.clear();
  }
}

/**
 * An HNSW graph (usearch) saved in the data directory, mapped read-only and searched by a search
 * worker of its own, plus the changes made since it was written: the graph's entries for changed
 * slots are skipped, and the changed slots that have a vector now are searched exactly (usearch's
 * SIMD brute force over a copy of them), the two merged by cosine. Nothing here updates or writes
 * a graph: the build worker does (HnswIndex.write), from the saved graph and the changes, and the
 * new graph is then opened in place of this one. So the event loop never loads, maps, updates,
 * saves or searches a graph; it only merges what the worker found with the changes.
 */
export class HnswIndex implements VectorIndex {
  /** Slots added or removed since the graph was written: the graph's entries for them are not used. */
  private readonly changed = new Set<number>();
  /** Of the changed slots, those with a vector now. */
  private readonly recent: ExactIndex;
  /** Changed slots that the graph holds (hidden from its answers). */
  private hidden = 0;
  /** Searches under way, and whether another graph has taken this one's place. */
  private searching = 0;
  private closed = false;
  /** A new worker being started for the graph after its worker failed. */
  private restarting: Promise<GraphSearcher> | undefined;

  private constructor(
    private searcher: GraphSearcher,
    /** How many entries the graph holds. */
    private readonly total: number,
    /** `members[slot]` is 1 for each slot the graph holds. */
    private readonly members: Uint8Array,
    /** The graph's file: the base of the next one written. */
    readonly file: string,
    private readonly store: VectorStore,
  ) {
    this.recent = new ExactIndex(store);
  }

  /**
   * Has a search worker map a saved graph, whose slots are `members`; the changes made since it
   * was written are given to `track` afterwards, in the turn the index is put in use.
   */
  static async open(file: string, store: VectorStore, members: Uint8Array): Promise<HnswIndex> {
    const { searcher, size } = await GraphSearcher.open(file);
    return new HnswIndex(searcher, size, members, file, store);
  }

  /** The slots changed since the graph was written; `hasVector` tells which of them are in the index now (their vectors read from the store). */
  track(changed: Iterable<number>, hasVector: (slot: number) => boolean): this {
    for (const slot of changed) {
      if (hasVector(slot)) this.add(slot);
      else this.remove(slot);
    }
    return this;
  }

  /** Ends its search worker once the searches under way are answered (another graph is in use). */
  close(): void {
    this.closed = true;
    if (this.searching === 0) this.searcher.close();
  }

  /**
   * A saved graph (mapped read-only by its worker) and the names of its slots, or undefined when
   * there is none or it does not match its names file (then the caller rebuilds).
   */
  static async load(file: string, store: VectorStore): Promise<{ index: HnswIndex; names: SlotNames } | undefined> {
    const saved = readNames(file);
    if (!saved) return undefined;
    let index: HnswIndex;
    try {
      index = await HnswIndex.open(saved.graph, store, membersOf(saved.names));
    } catch {
      return undefined;
    }
    if (index.total === saved.size) return { index, names: saved.names };
    index.close();
    return undefined;
  }

  /**
   * Writes a graph in a worker thread (off the event loop): a new one over the given vectors, or
   * the saved `base` loaded there with the changes applied; saves it under a new name of `file`
   * and writes the names file that names it (graph-files.ts). This thread only reads the slots and
   * copies their vectors into the worker's chunks, FILL_SLICE_MS of the event loop at a time.
   */
  static async write(file: string, changes: GraphChanges, log: (m: string) => void = () => undefined): Promise<{ graph: string; size: number; members: Uint8Array }> {
    const slots = changes.slots[Symbol.iterator]();
    // Each chunk's vectors and keys, in memory shared with the worker and filled again for the
    // next chunk once the worker has added this one: no new 3 MB buffer per chunk, each of which
    // counted towards this thread's next full garbage collection.
    const matrix = new Float32Array(new SharedArrayBuffer(BUILD_CHUNK * DIMENSIONS * Float32Array.BYTES_PER_ELEMENT));
    const keys = new BigUint64Array(new SharedArrayBuffer(BUILD_CHUNK * BigUint64Array.BYTES_PER_ELEMENT));
    const worker = new Worker(path.join(__dirname, 'hnsw-build-worker.js'), { workerData: { dimensions: DIMENSIONS } });
    let pending: { resolve: (r: BuildReply) => void; reject: (e: Error) => void } | undefined;
    // Kept: a worker that fails between two requests fails the next one at once.
    let failed: Error | undefined;
    const fail = (err: Error) => {
      failed ??= err;
      pending?.reject(err);
      pending = undefined;
    };
    worker.on('message', (reply: BuildReply) => {
      const waiting = pending;
      pending = undefined;
      if (reply.type === 'error') waiting?.reject(new Error(`HNSW graph worker: ${reply.message}`));
      else waiting?.resolve(reply);
    });
    // Settled when the worker runs (rejected by `fail` if it fails or exits first).
    const online = new Promise<void>((resolve, reject) => {
      pending = { resolve: () => resolve(), reject };
      worker.once('online', () => {
        pending = undefined;
        resolve();
      });
    });
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`HNSW graph worker exited (${code})`)));
    const ask = (request: BuildRequest) =>
      new Promise<BuildReply>((resolve, reject) => {
        if (failed) return reject(failed);
        pending = { resolve, reject };
        worker.postMessage(request);
      });
    const started = Date.now();
    try {
      // The worker started in one turn of the event loop, its first chunk filled in a later one.
      await online;
      if (changes.base) await ask({ type: 'load', file, graph: changes.base });
      if (changes.removed.length > 0) await ask({ type: 'remove', slots: Uint32Array.from(changes.removed) });
      let done = 0;
      let logged = 0;
      const progress = () => {
        if (changes.count <= 50_000 || logged === done) return;
        logged = done;
        log(`  HNSW ${done}/${changes.count} (${((Date.now() - started) / 1000).toFixed(0)} s, off the event loop)`);
      };
      for (let last = false; !last; ) {
        // Each entry "name\tlabel" (neither holds a tab or a newline), sent as one string: cloning
        // 2,000 pairs for the worker took ~0.8 ms of the event loop, one string a few µs.
        const names: string[] = [];
        // Filled over as many turns of the event loop as it takes, FILL_SLICE_MS each.
        const slice = new LoopSlice(FILL_SLICE_MS);
        while (names.length < BUILD_CHUNK) {
          if (slice.spent) await slice.pause();
          const next = slots.next();
          if (next.done) {
            last = true;
            break;
          }
          const entry = changes.read(next.value);
          if (!entry) continue;
          matrix.set(entry.vector, names.length * DIMENSIONS);
          keys[names.length] = BigInt(next.value);
          names.push(`${entry.name[0]}\t${entry.name[1]}`);
        }
        if (names.length === 0) continue;
        const n = names.length;
        await ask({ type: 'add', keys: keys.subarray(0, n), vectors: matrix.subarray(0, n * DIMENSIONS), names: names.join('\n') });
        done += n;
        if (done % 50_000 < n) progress();
      }
      // The last line once, whether or not the last chunk ended a 50,000.
      progress();
      const saved = await ask({ type: 'save', file, keep: changes.keep });
      if (saved.type !== 'saved') throw new Error(`HNSW graph worker: unexpected reply ${saved.type}`);
      return { graph: saved.graph, size: saved.size, members: saved.members };
    } finally {
      worker.removeAllListeners('exit');
      await worker.terminate();
    }
  }

  /** How many entries the graph itself holds (changed slots' included). */
  get graphSize(): number {
    return this.total;
  }

  /** Slots changed since the graph was written. */
  get changes(): number {
    return this.changed.size;
  }

  /**
   * The changes since the graph was written, for the worker to apply to it (HnswIndex.write), and
   * how many of the graph's entries they would leave removed and not taken again by an added one
   * (usearch reuses a removed entry for the next added key).
   */
  pendingChanges(): { removed: number[]; slots: number[]; tombstones: number } {
    return { removed: [...this.changed], slots: [...this.recent.slots], tombstones: Math.max(0, this.hidden - this.recent.size) };
  }

  get size(): number {
    return this.total - this.hidden + this.recent.size;
  }

  private change(slot: number): void {
    if (this.changed.has(slot)) return;
    this.changed.add(slot);
    if (this.members[slot] === 1) this.hidden++;
  }

  /** The vector itself is read from the store (set it there first). */
  add(slot: number): void {
    this.change(slot);
    this.recent.add(slot);
  }

  remove(slot: number): void {
    this.change(slot);
    this.recent.remove(slot);
  }

  async nearest(query: Float32Array, k: number, breadth?: number, scores?: Map<number, number>): Promise<number[]> {
    return (await this.nearestEach([{ query, k, breadth, scores }]))[0];
  }

  async nearestEach(requests: Nearest[]): Promise<number[][]> {
    this.searching++;
    try {
      if (this.searcher.broken && !this.closed) {
        // Its worker failed (it should not): the next search starts another over the same file.
        this.restarting ??= GraphSearcher.open(this.file)
          .then(({ searcher }) => (this.searcher = searcher))
          .finally(() => (this.restarting = undefined));
        await this.restarting;
      }
      // Each request's first ask, all in one message to the worker.
      const wants = requests.map(({ k }) => this.firstWant(k));
      const asked = requests.flatMap(({ query, breadth = HNSW.expansion_search }, i) => (wants[i] > 0 ? [{ query, k: wants[i], breadth }] : []));
      const answers = this.searcher.searchEach(asked);
      let next = 0;
      // Every request settled before the count of searches under way drops (close waits for it).
      const settled = await Promise.allSettled(requests.map((request, i) => this.search(request, wants[i] > 0 ? answers[next++] : undefined)));
      return settled.map((s) => {
        if (s.status === 'rejected') throw s.reason;
        return s.value;
      });
    } finally {
      if (--this.searching === 0 && this.closed) this.searcher.close();
    }
  }

  /**
   * How many the graph is asked for first: a few more when some of its slots have changed. It
   * ranks by its int8 copies: GRAPH_OVERSAMPLE times as many, scored below on the store's (int16)
   * vectors. 0 for an empty graph (nothing asked).
   */
  private firstWant(k: number): number {
    return Math.min(this.total, GRAPH_OVERSAMPLE * (k + Math.min(this.hidden, k)));
  }

  /** One request's answer, from the graph's answer to its first ask (`first`), asking wider when changed slots were the nearest. */
  private async search({ query, k, breadth = HNSW.expansion_search, scores }: Nearest, first: Promise<Uint32Array> | undefined): Promise<number[]> {
    const total = this.total;
    let fromGraph: number[] = [];
    for (let want = this.firstWant(k), answer = first; want > 0 && answer; want = Math.min(total, 2 * want), answer = this.searcher.search(query, want, breadth)) {
      const keys = await answer;
      // The changes as they are now, when the worker has answered.
      fromGraph = Array.from(keys).filter((slot) => !this.changed.has(slot));
      if (fromGraph.length >= k || keys.length < want || want === total) break;
    }
    const recent = this.recent.nearest(query, k);
    const handle = this.store.query(query);
    const candidates = [...fromGraph, ...recent].map((slot) => [slot, this.store.dot(slot, handle)] as const);
    return answered(
      candidates.sort((a, b) => b[1] - a[1]).slice(0, k),
      this.store,
      scores,
    );
  }
}
