/**
 * Embeddings of domain texts, kept on disk between runs (one file per model in the data
 * directory) so a restart does not re-embed the inventory. The file is an append-only log of
 * records `[u16 text byte length][text, UTF-8][384 × float32]`: new vectors are appended as they
 * are made (a 1M-name inventory takes tens of minutes to embed, and a crash keeps what was done),
 * and a torn last record is ignored on load. Loaded vectors are views into one buffer.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DIMENSIONS } from './embedder';

const VECTOR_BYTES = DIMENSIONS * 4;

export class EmbeddingCache {
  private readonly vectors = new Map<string, Float32Array>();
  private pending: Buffer[] = [];

  constructor(private readonly file?: string) {
    if (file && existsSync(file)) this.load(readFileSync(file));
  }

  private load(buf: Buffer): void {
    const records: Array<{ text: string; at: number }> = [];
    let at = 0;
    while (at + 2 <= buf.length) {
      const textLength = buf.readUInt16LE(at);
      const end = at + 2 + textLength + VECTOR_BYTES;
      if (end > buf.length) break; // torn tail: the process died while appending
      records.push({ text: buf.toString('utf8', at + 2, at + 2 + textLength), at: at + 2 + textLength });
      at = end;
    }
    const all = new Float32Array(records.length * DIMENSIONS);
    const bytes = new Uint8Array(all.buffer);
    records.forEach((r, i) => {
      bytes.set(buf.subarray(r.at, r.at + VECTOR_BYTES), i * VECTOR_BYTES);
      this.vectors.set(r.text, all.subarray(i * DIMENSIONS, (i + 1) * DIMENSIONS));
    });
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

  /** Appends the vectors set since the last save. */
  save(): void {
    if (!this.file || this.pending.length === 0) return;
    mkdirSync(path.dirname(this.file), { recursive: true });
    appendFileSync(this.file, Buffer.concat(this.pending));
    this.pending = [];
  }
}
