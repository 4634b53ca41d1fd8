import { DIMENSIONS } from './embedder';

/** Rows of a block of WordVectors (6 MiB of float32): a new block is allocated, never a larger copy of all. */
const BLOCK_ROWS = 4_096;

/**
 * The dot product of the float32 vector at `at` in `block` and `query` (their cosine, both being
 * unit vectors), read in place. Four sums side by side: one sum's chain of additions waits on
 * itself each step; four overlap. At a million names each word's rows are a cache miss: in a
 * throwaway script of 2026-12-03 (274 words of 100,000 a search, caches flushed between
 * searches), this loop over one array took 0.68–0.79 ms a search, SimSIMD on a view of each row
 * 0.79–0.94, and SimSIMD on vectors found through a Map of words and one of senses 0.99–1.16.
 * (embedding-cache's dotHalf is the same loop over float16: one function for both kinds of array
 * would make each read polymorphic.) The senses' rows as int8 with a scale a row, a quarter of
 * the bytes, moved search:quality's tune/meaning row from 0.934 to 0.932 (2026-12-03): float32.
 */
function dotAt(block: Float32Array, at: number, query: Float32Array): number {
  let a = 0;
  let b = 0;
  let c = 0;
  let d = 0;
  for (let i = 0; i < DIMENSIONS; i += 4) {
    a += block[at + i] * query[i];
    b += block[at + i + 1] * query[i + 1];
    c += block[at + i + 2] * query[i + 2];
    d += block[at + i + 3] * query[i + 3];
  }
  return a + b + c + d;
}

/**
 * The vectors of the names' words and of each word's first WordNet senses, by word: a word's
 * rows side by side in a block of float32 (its own vector, then its senses'), found through one
 * Map to the word's number and typed arrays. A search reads a few hundred words' rows: a Map of
 * vectors and a Map of arrays of sense vectors cost a cache miss at each step between (the entry,
 * the array, each vector's object, its data), these one Map look-up and the rows. Words are only
 * added (as the names bring them): a word no name holds any more keeps its rows, as it did before.
 */
export class WordVectors {
  private readonly ids = new Map<string, number>();
  private readonly blocks: Float32Array[] = [];
  /** Rows used in the last block. */
  private used = BLOCK_ROWS;
  /** Each word's first row (its own vector) over all blocks, and how many sense rows follow it. */
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
    const rows = 1 + senses.length;
    // (senseRows counts in a byte; a word has at most lexicon's MAX_WORD_SENSES.)
    if (senses.length > 255) throw new Error(`a word of ${senses.length} senses`);
    if (this.used + rows > BLOCK_ROWS) {
      this.blocks.push(new Float32Array(BLOCK_ROWS * DIMENSIONS));
      this.used = 0;
    }
    const id = this.ids.size;
    if (id === this.firstRow.length) {
      this.firstRow = grown(this.firstRow);
      this.senseRows = grown(this.senseRows);
    }
    const block = this.blocks[this.blocks.length - 1];
    const at = this.used * DIMENSIONS;
    block.set(vector, at);
    senses.forEach((s, k) => block.set(s, at + (k + 1) * DIMENSIONS));
    this.firstRow[id] = (this.blocks.length - 1) * BLOCK_ROWS + this.used;
    this.senseRows[id] = senses.length;
    this.used += rows;
    this.ids.set(word, id);
  }

  /** How many of the word's senses have a vector. */
  senses(id: number): number {
    return this.senseRows[id];
  }

  /** The cosine of the word's own vector (`row` 0) or of its `row`th sense with `query`. */
  dot(id: number, row: number, query: Float32Array): number {
    const first = this.firstRow[id];
    return dotAt(this.blocks[Math.floor(first / BLOCK_ROWS)], ((first % BLOCK_ROWS) + row) * DIMENSIONS, query);
  }
}

function grown<T extends Uint32Array | Uint8Array>(array: T): T {
  const bigger = new (array.constructor as new (length: number) => T)(array.length * 2);
  bigger.set(array);
  return bigger;
}
