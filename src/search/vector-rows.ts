/**
 * Unit vectors kept as rows of int16 in a WebAssembly memory of their own, and their dot products
 * with a query by SIMD kernels (dot-kernels.wat). A search takes ~1,600 dot products of 384
 * components at a million names (its candidates' names, their words and the words' senses); in
 * JavaScript each took ~0.35 µs when its row was in the CPU's cache and ~1 µs when not, these
 * ~0.15 and ~0.65 (a throwaway script of 2026-12-03, random rows of 200,000; SimSIMD's native
 * call alone costs ~0.17 µs, and JavaScript cannot read float16 or int16 four lanes at a time).
 *
 * A component x is kept as round(32767·x): within 1/65,534 (absolute) at any size (float16 keeps
 * 11 significant bits, so as fine only near 0.03), so a cosine moves by less than 1e-5, well
 * under what the scorer's signals tell apart (search:quality, bench/RESULTS.md). 768 bytes a
 * vector, as float16's. A query is copied in as float32, divided by 32767 so that a kernel's sum
 * is the cosine itself.
 *
 * One memory holds up to 4 GiB (WebAssembly's 32-bit addresses): ~5.59 million vectors; past
 * that `add` throws (the embedding cache holds every text of its log: names, words, senses, so
 * an environment of ~5M names would need its cache in more than one memory).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DIMENSIONS } from './embedder';

/** The compiled kernels, from dot-kernels.wat (`npm run build` writes it: run as a script, this file compiles it). */
export const KERNELS_FILE = path.resolve(__dirname, '..', '..', 'wasm', 'dot-kernels.wasm');

/** A query copied into a VectorRows' memory, for its dot products (`query`). */
export type QueryHandle = number & { readonly __query: unique symbol };

interface Kernels {
  dot(row: number, query: number, dims: number): number;
  dot2(row: number, a: number, b: number, dims: number, out: number): number;
  put(src: number, row: number, dims: number): void;
}

/** One step of a component. */
const STEP = 32_767;
/** WebAssembly's page, and the most pages of a 32-bit memory. */
const PAGE = 65_536;
const MAX_PAGES = 65_536;
/** Pages added at a time as rows come (16 MiB): few grows at a million rows, little unused. */
const GROW_PAGES = 256;
/**
 * Queries kept at once. A handle stays good until this many more queries are copied in: a caller
 * takes its handles and uses them with no await between (a search's scoring does), and a stale
 * handle throws rather than reading another query.
 */
const QUERY_SLOTS = 16;
const ROW_BYTES = DIMENSIONS * 2;
const QUERY_BYTES = DIMENSIONS * 4;
/** Where dot2's second sum is stored, then the queries, then the vector `add` keeps; rows start on the second page. */
const OUT_AT = 0;
const QUERIES_AT = 64;
const ADDED_AT = QUERIES_AT + QUERY_SLOTS * QUERY_BYTES;
const ROWS_AT = PAGE;

let compiled: WebAssembly.Module | undefined;

export class VectorRows {
  private readonly memory = new WebAssembly.Memory({ initial: 1, maximum: MAX_PAGES });
  private readonly kernels: Kernels;
  /** Views of the memory, made again when it grows (a grown memory's old buffer is detached). */
  private int16!: Int16Array;
  private float32!: Float32Array;
  private count = 0;
  /** The handle each query slot holds now. */
  private readonly holders = new Float64Array(QUERY_SLOTS).fill(-1);
  private queries = 0;

  constructor() {
    if (DIMENSIONS % 16 !== 0) throw new Error(`the kernels take multiples of 16 components, not ${DIMENSIONS}`);
    compiled ??= new WebAssembly.Module(readFileSync(KERNELS_FILE));
    this.kernels = new WebAssembly.Instance(compiled, { rows: { memory: this.memory } }).exports as unknown as Kernels;
    this.views();
  }

  private views(): void {
    this.int16 = new Int16Array(this.memory.buffer);
    this.float32 = new Float32Array(this.memory.buffer);
  }

  get size(): number {
    return this.count;
  }

  /** Keeps the vector; returns its row number (rows are numbered in the order they came). */
  add(vector: Float32Array): number {
    const row = this.count;
    const end = ROWS_AT + (row + 1) * ROW_BYTES;
    if (end > this.memory.buffer.byteLength) {
      const pages = this.memory.buffer.byteLength / PAGE;
      const more = Math.min(MAX_PAGES - pages, Math.max(GROW_PAGES, Math.ceil((end - this.memory.buffer.byteLength) / PAGE)));
      // (A row may not end at 4 GiB itself: the kernels' end address, in 32 bits, would be 0.)
      if (pages + more < Math.ceil(end / PAGE) || end >= MAX_PAGES * PAGE) throw new Error(`vector rows: no room for a vector past ${row.toLocaleString('en')} (4 GiB)`);
      this.memory.grow(more);
      this.views();
    }
    if (vector.length !== DIMENSIONS) throw new Error(`vector rows: a vector of ${vector.length} components, not ${DIMENSIONS}`);
    // Made int16 by a kernel (a start at 1M names adds ~1.05M vectors: ~6 s in JavaScript).
    this.float32.set(vector, ADDED_AT / 4);
    this.kernels.put(ADDED_AT, ROWS_AT + row * ROW_BYTES, DIMENSIONS);
    this.count++;
    return row;
  }

  /** The vector of `row` as float32, into `into` (a new array unless given). */
  read(row: number, into: Float32Array = new Float32Array(DIMENSIONS)): Float32Array {
    const at = (ROWS_AT + row * ROW_BYTES) / 2;
    for (let i = 0; i < DIMENSIONS; i++) into[i] = this.int16[at + i] / STEP;
    return into;
  }

  /** Copies the query in for `dot` and `dot2`: its handle is good for the next QUERY_SLOTS − 1 queries. */
  query(vector: Float32Array): QueryHandle {
    const handle = this.queries++;
    const slot = handle % QUERY_SLOTS;
    const at = (QUERIES_AT + slot * QUERY_BYTES) / 4;
    for (let i = 0; i < DIMENSIONS; i++) this.float32[at + i] = vector[i] / STEP;
    this.holders[slot] = handle;
    return handle as QueryHandle;
  }

  /** Where a handle's query is, if it is still there. */
  private queryAt(handle: QueryHandle): number {
    const slot = handle % QUERY_SLOTS;
    if (this.holders[slot] !== handle) throw new Error(`vector rows: query ${handle} was overwritten (${this.queries} copied in since start)`);
    return QUERIES_AT + slot * QUERY_BYTES;
  }

  /** The cosine of the vector of `row` and the query (both unit vectors). */
  dot(row: number, query: QueryHandle): number {
    return this.kernels.dot(ROWS_AT + row * ROW_BYTES, this.queryAt(query), DIMENSIONS);
  }

  /** The cosines of the vector of `row` with `a` (returned) and with `b` (then `second`), the row read once. */
  dot2(row: number, a: QueryHandle, b: QueryHandle): number {
    return this.kernels.dot2(ROWS_AT + row * ROW_BYTES, this.queryAt(a), this.queryAt(b), DIMENSIONS, OUT_AT);
  }

  /** dot2's cosine with `b`. */
  get second(): number {
    return this.float32[OUT_AT / 4];
  }
}

if (require.main === module) {
  // The build's step: dot-kernels.wat → dist/wasm/dot-kernels.wasm, with wabt (a development dependency).
  void (async () => {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const wabt = await (await import('wabt')).default();
    const source = path.resolve(__dirname, '..', '..', '..', 'src', 'search', 'dot-kernels.wat');
    const module = wabt.parseWat(source, readFileSync(source, 'utf8'), { simd: true });
    module.validate();
    mkdirSync(path.dirname(KERNELS_FILE), { recursive: true });
    writeFileSync(KERNELS_FILE, module.toBinary({}).buffer);
    module.destroy();
  })();
}
