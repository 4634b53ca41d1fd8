/**
 * Embeddings of domain texts, kept on disk between runs (one file per model and environment in
 * the data directory) so a restart does not re-embed the inventory. The file is an append-only
 * log of records `[u16 text byte length][text, UTF-8][384 × float32]`: new vectors are appended
 * as they are made (a 1M-name inventory takes tens of minutes to embed, and a crash keeps what
 * was done). The file is read in chunks (it passes 1.5 GB at a million names), and a torn last
 * record, left by a process that died while appending, is cut off before anything is appended.
 * In memory the vectors are int16 rows (VectorRows): the log keeps the model's float32.
 */
import { hash } from 'node:crypto';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { DIMENSIONS, type Embedder } from './embedder';
import { VectorRows } from './vector-rows';

const VECTOR_BYTES = DIMENSIONS * 4;
const CHUNK = 64 * 1024 * 1024;

/** A chunk's whole records: each text, and where its vector starts in the chunk and in the file. */
type LogRecord = { text: string; vectorAt: number; fileAt: number };

/**
 * A log's whole records, a chunk at a time. A torn last record (a process that died while
 * appending) is cut off the file when `repair` (the log's writer; a reader leaves it be).
 */
function* logChunks(file: string, repair: boolean): Generator<{ records: LogRecord[]; buf: Buffer }> {
  const fd = openSync(file, 'r');
  let carry = Buffer.alloc(0);
  let complete = 0; // bytes of the file up to the end of the last whole record
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(CHUNK);
      const read = readSync(fd, chunk, 0, CHUNK, null);
      if (read === 0) break;
      const buf = carry.length ? Buffer.concat([carry, chunk.subarray(0, read)]) : chunk.subarray(0, read);
      let at = 0;
      const records: LogRecord[] = [];
      while (at + 2 <= buf.length) {
        const textLength = buf.readUInt16LE(at);
        const end = at + 2 + textLength + VECTOR_BYTES;
        if (end > buf.length) break;
        records.push({ text: buf.toString('utf8', at + 2, at + 2 + textLength), vectorAt: at + 2 + textLength, fileAt: complete + at + 2 + textLength });
        at = end;
      }
      yield { records, buf };
      complete += at;
      carry = Buffer.from(buf.subarray(at));
    }
  } finally {
    closeSync(fd);
  }
  if (carry.length && repair) truncateSync(file, complete);
}

/** The largest share of a TextIds table in use before it doubles. */
const TEXT_TABLE_LOAD = 0.75;

/**
 * Numbers by text, keyed by a 64-bit digest of the text (SHA-1's first 8 bytes), in an
 * open-addressed table of typed arrays (linear probing): at most 16 bytes a text rather than a
 * Map's entry and the text's own string (~90 MiB at 1M names, where only the cache held those
 * strings). Two of a million texts share a digest with odds of about 3·10⁻⁸, and making a text
 * share another's is finding a collision of SHA-1's 64-bit prefix with a given text: a seller
 * cannot list a name whose text takes another name's vector (a faster non-cryptographic hash
 * could be steered to). A digest costs ~0.4 µs (`digest`).
 */
export class TextIds {
  private high = new Uint32Array(1024);
  private low = new Uint32Array(1024);
  /** -1: an empty place. */
  private ids = new Int32Array(1024).fill(-1);
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(text: string): number | undefined {
    const [high, low] = digest(text);
    const at = this.place(high, low);
    return this.ids[at] < 0 ? undefined : this.ids[at];
  }

  has(text: string): boolean {
    return this.get(text) !== undefined;
  }

  /** The text's number; a text not numbered yet is given `next()`'s. */
  add(text: string, next: () => number): number {
    if (this.count + 1 > TEXT_TABLE_LOAD * this.ids.length) this.grow();
    const [high, low] = digest(text);
    const at = this.place(high, low);
    if (this.ids[at] >= 0) return this.ids[at];
    this.high[at] = high;
    this.low[at] = low;
    this.count++;
    return (this.ids[at] = next());
  }

  /** Where the digest is, or the empty place where it would go. */
  private place(high: number, low: number): number {
    const mask = this.ids.length - 1;
    let at = low & mask;
    while (this.ids[at] >= 0 && (this.low[at] !== low || this.high[at] !== high)) at = (at + 1) & mask;
    return at;
  }

  private grow(): void {
    const { high, low, ids } = this;
    this.high = new Uint32Array(ids.length * 2);
    this.low = new Uint32Array(ids.length * 2);
    this.ids = new Int32Array(ids.length * 2).fill(-1);
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] < 0) continue;
      const at = this.place(high[i], low[i]);
      this.high[at] = high[i];
      this.low[at] = low[i];
      this.ids[at] = ids[i];
    }
  }
}

/**
 * A text's 64-bit digest (TextIds), as two little-endian 32-bit words. Asked
 * as a latin1 string (a character a byte), not a Buffer: 0.4 µs rather than 1.5–2 µs a text here,
 * ~5 s of a 1M-name start, which digests each name's text twice (the log read, then the names).
 */
export function digest(text: string): [number, number] {
  const bytes = hash('sha1', text, 'binary'); // 'binary': latin1, a character a byte
  const word = (at: number) => (bytes.charCodeAt(at) | (bytes.charCodeAt(at + 1) << 8) | (bytes.charCodeAt(at + 2) << 16) | (bytes.charCodeAt(at + 3) << 24)) >>> 0;
  return [word(0), word(4)];
}

export class EmbeddingCache {
  /** Each text's vector in the slab. */
  private readonly ids = new TextIds();
  /** The vectors (an inventory's VectorStore refers to its names' here rather than copying them). */
  readonly slab = new VectorRows();
  private pending: Buffer[] = [];

  constructor(private readonly file?: string) {
    if (file && existsSync(file)) this.load(file);
  }

  private load(file: string): void {
    // A record's vector is at any byte offset of the chunk: copied to an aligned float32 first.
    const vector = new Float32Array(DIMENSIONS);
    const bytes = new Uint8Array(vector.buffer);
    for (const { records, buf } of logChunks(file, true)) {
      for (const r of records) {
        this.ids.add(r.text, () => {
          bytes.set(buf.subarray(r.vectorAt, r.vectorAt + VECTOR_BYTES));
          return this.slab.add(vector);
        });
      }
    }
  }

  /** The text's vector (a float32 copy of the one kept), if the cache has it. */
  get(text: string): Float32Array | undefined {
    const id = this.ids.get(text);
    return id === undefined ? undefined : this.slab.read(id);
  }

  /** The number of the text's vector in `slab`, if the cache has it. */
  ref(text: string): number | undefined {
    return this.ids.get(text);
  }

  has(text: string): boolean {
    return this.ids.has(text);
  }

  set(text: string, vector: Float32Array): void {
    const known = this.ids.size;
    this.ids.add(text, () => this.slab.add(vector));
    if (this.ids.size === known || !this.file) return;
    const head = Buffer.alloc(2);
    const body = Buffer.from(text, 'utf8');
    head.writeUInt16LE(body.length, 0);
    this.pending.push(head, body, Buffer.from(vector.buffer, vector.byteOffset, VECTOR_BYTES));
  }

  get size(): number {
    return this.ids.size;
  }

  /**
   * Embeds the texts the cache lacks and appends them to the log; then every one of `texts` is in
   * the cache. `borrowed`: another log to take vectors from first (the OpenSearch engine's words,
   * from the embedded engine's log on this host, at a first start).
   */
  async fill(texts: string[], embedder: Embedder, borrowed?: EmbeddingLogReader): Promise<void> {
    let missing = [...new Set(texts.filter((t) => !this.ids.has(t)))];
    if (missing.length === 0) return;
    if (borrowed) {
      for (const t of missing) {
        const vector = borrowed.get(t);
        if (vector) this.set(t, vector);
      }
      missing = missing.filter((t) => !this.ids.has(t));
    }
    const vectors = await embedder.embedAll(missing);
    missing.forEach((t, i) => this.set(t, vectors[i]));
    this.save();
  }

  /** Appends the vectors set since the last save. */
  save(): void {
    if (!this.file || this.pending.length === 0) return;
    mkdirSync(path.dirname(this.file), { recursive: true });
    appendFileSync(this.file, Buffer.concat(this.pending));
    this.pending = [];
  }
}

/**
 * Another engine's log read in place: where each text's vector is in the file (~100 bytes a text
 * in memory, against 1.5 KB for the vector), each vector read when asked for. The OpenSearch
 * engine's first indexing takes the vectors the embedded engine made on this host from it, so a
 * switch of engines does not embed the inventory again (~19 minutes a million names here).
 */
export class EmbeddingLogReader {
  private readonly at = new Map<string, number>();
  private fd: number | undefined;

  private constructor(file: string) {
    this.fd = openSync(file, 'r');
  }

  /** The log at `file`, if there is one, its texts read a chunk per turn of the event loop. */
  static async open(file: string): Promise<EmbeddingLogReader | undefined> {
    if (!existsSync(file)) return undefined;
    const reader = new EmbeddingLogReader(file);
    for (const { records } of logChunks(file, false)) {
      for (const r of records) reader.at.set(r.text, r.fileAt);
      await setImmediate();
    }
    return reader;
  }

  get size(): number {
    return this.at.size;
  }

  get(text: string): Float32Array | undefined {
    const at = this.at.get(text);
    if (at === undefined || this.fd === undefined) return undefined;
    const vector = new Float32Array(DIMENSIONS);
    readSync(this.fd, new Uint8Array(vector.buffer), 0, VECTOR_BYTES, at);
    return vector;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.at.clear();
  }
}
