/**
 * Embeddings of domain texts, kept on disk between runs (one file per model and environment in
 * the data directory) so a restart does not re-embed the inventory. The file is an append-only
 * log of records `[u16 text byte length][text, UTF-8][384 × float32]`: new vectors are appended
 * as they are made (a 1M-name inventory takes tens of minutes to embed, and a crash keeps what
 * was done). The file is read in chunks (it passes 1.5 GB at a million names), and a torn last
 * record, left by a process that died while appending, is cut off before anything is appended.
 */
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { DIMENSIONS, type Embedder } from './embedder';

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

export class EmbeddingCache {
  private readonly vectors = new Map<string, Float32Array>();
  private pending: Buffer[] = [];

  constructor(private readonly file?: string) {
    if (file && existsSync(file)) this.load(file);
  }

  private load(file: string): void {
    for (const { records, buf } of logChunks(file, true)) {
      // The chunk's vectors copied into one aligned block, each a view of it.
      const block = new Float32Array(records.length * DIMENSIONS);
      const bytes = new Uint8Array(block.buffer);
      records.forEach((r, i) => {
        bytes.set(buf.subarray(r.vectorAt, r.vectorAt + VECTOR_BYTES), i * VECTOR_BYTES);
        this.vectors.set(r.text, block.subarray(i * DIMENSIONS, (i + 1) * DIMENSIONS));
      });
    }
  }

  get(text: string): Float32Array | undefined {
    return this.vectors.get(text);
  }

  set(text: string, vector: Float32Array): void {
    if (this.vectors.has(text)) return;
    this.vectors.set(text, vector);
    if (!this.file) return;
    const head = Buffer.alloc(2);
    const body = Buffer.from(text, 'utf8');
    head.writeUInt16LE(body.length, 0);
    this.pending.push(head, body, Buffer.from(vector.buffer, vector.byteOffset, VECTOR_BYTES));
  }

  get size(): number {
    return this.vectors.size;
  }

  /**
   * Embeds the texts the cache lacks and appends them to the log; then every one of `texts` is in
   * the cache. `borrowed`: another log to take vectors from first (the OpenSearch engine's words,
   * from the embedded engine's log on this host, at a first start).
   */
  async fill(texts: string[], embedder: Embedder, borrowed?: EmbeddingLogReader): Promise<void> {
    let missing = [...new Set(texts.filter((t) => !this.vectors.has(t)))];
    if (missing.length === 0) return;
    if (borrowed) {
      for (const t of missing) {
        const vector = borrowed.get(t);
        if (vector) this.set(t, vector);
      }
      missing = missing.filter((t) => !this.vectors.has(t));
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
