/**
 * Embeddings of domain texts, kept on disk between runs (one file per model in the data
 * directory) so a restart does not re-embed the inventory. Layout: 4-byte header length, JSON
 * array of texts, then their float32 vectors in the same order.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DIMENSIONS } from './embedder';

export class EmbeddingCache {
  private readonly vectors = new Map<string, Float32Array>();
  private dirty = false;

  constructor(private readonly file?: string) {
    if (file && existsSync(file)) {
      const buf = readFileSync(file);
      const headerLength = buf.readUInt32LE(0);
      const texts = JSON.parse(buf.subarray(4, 4 + headerLength).toString('utf8')) as string[];
      const data = new Float32Array(buf.buffer.slice(buf.byteOffset + 4 + headerLength, buf.byteOffset + buf.length));
      texts.forEach((t, i) => this.vectors.set(t, data.slice(i * DIMENSIONS, (i + 1) * DIMENSIONS)));
    }
  }

  get(text: string): Float32Array | undefined {
    return this.vectors.get(text);
  }

  set(text: string, vector: Float32Array): void {
    this.vectors.set(text, vector);
    this.dirty = true;
  }

  get size(): number {
    return this.vectors.size;
  }

  save(): void {
    if (!this.file || !this.dirty) return;
    const texts = [...this.vectors.keys()];
    const header = Buffer.from(JSON.stringify(texts), 'utf8');
    const data = new Float32Array(texts.length * DIMENSIONS);
    texts.forEach((t, i) => data.set(this.vectors.get(t)!, i * DIMENSIONS));
    const len = Buffer.alloc(4);
    len.writeUInt32LE(header.length, 0);
    mkdirSync(path.dirname(this.file), { recursive: true });
    writeFileSync(`${this.file}.tmp`, Buffer.concat([len, header, Buffer.from(data.buffer)]));
    renameSync(`${this.file}.tmp`, this.file);
    this.dirty = false;
  }
}
