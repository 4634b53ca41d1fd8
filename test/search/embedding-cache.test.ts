import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DIMENSIONS } from '../../src/search/embedder';
import { EmbeddingCache, EmbeddingLogReader, TextIds, VectorSlab } from '../../src/search/embedding-cache';
import { dot, half, seeded, unitVector } from '../helpers/search-fakes';

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
    assert.deepEqual(second.get('café'), half(vector(2)));
    second.set('espresso bar', vector(3));
    second.set('café', vector(9)); // already known: neither replaced nor written twice
    second.save();

    const third = new EmbeddingCache(file);
    assert.equal(third.size, 3);
    assert.deepEqual(third.get('espresso bar'), half(vector(3)));
    assert.deepEqual(third.get('café'), half(vector(2)));
    assert.deepEqual(third.get('coffee joy'), half(vector(1)));
    assert.deepEqual(third.slab.read(third.ref('café')!), half(vector(2)), 'ref names the vector in the slab');
    assert.equal(third.ref('tea'), undefined);
    assert.equal(third.has('tea'), false);
  });

  it('TextIds: each text keeps the number it was given first, across the table doubling; texts never given one have none', () => {
    const ids = new TextIds();
    let next = 0;
    const texts = Array.from({ length: 5_000 }, (_, i) => `name ${i} ${'é'.repeat(i % 3)}`);
    for (const t of texts) assert.equal(ids.add(t, () => next++), next - 1);
    // Again: the number already given, and no new one asked for.
    for (const [i, t] of texts.entries()) assert.equal(ids.add(t, () => assert.fail('numbered twice')), i);
    assert.equal(ids.size, texts.length);
    assert.ok(texts.every((t, i) => ids.get(t) === i && ids.has(t)));
    assert.equal(ids.get('name 5000 '), undefined);
    assert.equal(ids.has('name 1'), false, 'a text is told by all of it, not a prefix');
  });

  it('VectorSlab: vectors kept as float16 in blocks, read back as float32, across blocks; a cosine within 1e-3 of the float32 one', () => {
    const slab = new VectorSlab();
    const random = seeded(16);
    // More than a block (16,384 vectors), so that numbers past the first block are read.
    const kept = Array.from({ length: 16_500 }, () => unitVector(random));
    const ids = kept.map((v) => slab.add(v));
    assert.deepEqual(ids.slice(0, 3), [0, 1, 2]);
    assert.equal(slab.size, kept.length);
    const query = unitVector(random);
    for (const i of [0, 1, 16_383, 16_384, 16_499]) {
      assert.deepEqual(slab.read(ids[i]), half(kept[i]));
      assert.ok(Math.abs(slab.dot(ids[i], query) - dot(kept[i], query)) < 1e-3, `vector ${i}: ${slab.dot(ids[i], query)} against ${dot(kept[i], query)}`);
      assert.ok(Math.abs(slab.dot(ids[i], kept[i]) - 1) < 1e-3);
    }
    const into = new Float32Array(DIMENSIONS);
    assert.equal(slab.read(ids[7], into), into, 'read into the array given');
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
