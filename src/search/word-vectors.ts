import { VectorRows, type QueryHandle } from './vector-rows';

/**
 * The vectors of the names' words and of each word's first WordNet senses, by word: a word's
 * rows side by side (its own vector, then its senses'), as int16 rows of a VectorRows whose SIMD
 * kernels give their cosines with a query, found through one Map to the word's number and typed
 * arrays. A search reads a few hundred words' rows: a Map of vectors and a Map of arrays of sense
 * vectors cost a cache miss at each step between (the entry, the array, each vector's object, its
 * data), these one Map look-up and the rows. Words are only added (as the names bring them): a
 * word no name holds any more keeps its rows, as it did before. (The senses' rows as int8 with a
 * scale a row, half int16's bytes, moved search:quality's tune/meaning row from 0.934 to 0.932 on
 * 2026-12-03.)
 */
export class WordVectors {
  private readonly ids = new Map<string, number>();
  private readonly rows = new VectorRows();
  /** Each word's first row (its own vector), and how many sense rows follow it. */
  private firstRow = new Uint32Array(1_024);
  private senseRows = new Uint8Array(1_024);

  get size(): number {
    return this.ids.size;
  }

  has(word: string): boolean {
    return this.ids.has(word);
  }

  /** The word's number, undefined when it has no vectors here. */
  id(word: string): number | undefined {
    return this.ids.get(word);
  }

  /** Keeps the word's vector and its senses' (a word already kept keeps its first). */
  add(word: string, vector: Float32Array, senses: Float32Array[]): void {
    if (this.ids.has(word)) return;
    // (senseRows counts in a byte; a word has at most lexicon's MAX_WORD_SENSES.)
    if (senses.length > 255) throw new Error(`a word of ${senses.length} senses`);
    const id = this.ids.size;
    if (id === this.firstRow.length) {
      this.firstRow = grown(this.firstRow);
      this.senseRows = grown(this.senseRows);
    }
    this.firstRow[id] = this.rows.add(vector);
    for (const s of senses) this.rows.add(s);
    this.senseRows[id] = senses.length;
    this.ids.set(word, id);
  }

  /** How many of the word's senses have a vector. */
  senses(id: number): number {
    return this.senseRows[id];
  }

  /** The query copied in for `dot` and `dot2` (VectorRows.query: use it with no await between). */
  query(vector: Float32Array): QueryHandle {
    return this.rows.query(vector);
  }

  /** The cosine of the word's own vector (`row` 0) or of its `row`th sense with `query`. */
  dot(id: number, row: number, query: QueryHandle): number {
    return this.rows.dot(this.firstRow[id] + row, query);
  }

  /** The cosines of the word's own vector with `a` (returned) and `b` (then `second`). */
  dot2(id: number, a: QueryHandle, b: QueryHandle): number {
    return this.rows.dot2(this.firstRow[id], a, b);
  }

  /** dot2's cosine with `b`. */
  get second(): number {
    return this.rows.second;
  }
}

function grown<T extends Uint32Array | Uint8Array>(array: T): T {
  const bigger = new (array.constructor as new (length: number) => T)(array.length * 2);
  bigger.set(array);
  return bigger;
}
