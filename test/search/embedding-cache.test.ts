import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DIMENSIONS } from '../../src/search/embedder';
import { EmbeddingCache, EmbeddingLogReader } from '../../src/search/embedding-cache';

const vector = (seed: number) => Float32Array.from({ length: DIMENSIONS }, (_, i) => seed + i / 1000);

describe('embedding cache (append-only log)', () => {
  it('keeps what was saved across restarts, and cuts off a torn last record before appending', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'embeddings-')), 'test.log');
    const first = new EmbeddingCache(file);
    first.set('coffee joy', vector(1));
    first.set('café', vector(2));
    first.save();
    const whole = statSync(file).size;
    // A process that died while appending leaves half a record behind.
    appendFileSync(file, Buffer.from([9, 0, 0x61, 0x62, 0x63]));

    const second = new EmbeddingCache(file);
    assert.equal(second.size, 2);
    assert.equal(statSync(file).size, whole, 'the torn tail is cut off');
    assert.deepEqual(second.get('café'), vector(2));
    second.set('espresso bar', vector(3));
    second.set('café', vector(9)); // already known: neither replaced nor written twice
    second.save();

    const third = new EmbeddingCache(file);
    assert.equal(third.size, 3);
    assert.deepEqual(third.get('espresso bar'), vector(3));
    assert.deepEqual(third.get('café'), vector(2));
    assert.deepEqual(third.get('coffee joy'), vector(1));
  });

  it('read in place by another engine: each vector read from its place in the file; a torn tail left as it is (the writer mends it)', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'embeddings-')), 'test.log');
    const writer = new EmbeddingCache(file);
    // Texts of other byte lengths than characters (é), and enough to span records of every offset.
    for (let i = 0; i < 500; i++) writer.set(`café ${i}`, vector(i));
    writer.save();
    appendFileSync(file, Buffer.from([9, 0, 0x61, 0x62, 0x63]));
    const size = statSync(file).size;
    assert.equal(await EmbeddingLogReader.open(path.join(path.dirname(file), 'none.log')), undefined);
    const reader = (await EmbeddingLogReader.open(file))!;
    assert.equal(reader.size, 500);
    assert.equal(statSync(file).size, size, 'a reader cuts nothing off');
    for (const i of [0, 1, 257, 499]) assert.deepEqual(reader.get(`café ${i}`), vector(i));
    assert.equal(reader.get('café 500'), undefined);
    reader.close();
    assert.equal(reader.get('café 1'), undefined, 'closed: nothing more is read');
  });
});
