import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DIMENSIONS } from '../../src/search/embedder';
import { digest, EmbeddingCache, EmbeddingLogReader, TextIds } from '../../src/search/embedding-cache';
import { asKept } from '../helpers/search-fakes';

// Components within ±1, as a unit vector's (the slab keeps them to 1/32,767), distinct for each seed.
const vector = (seed: number) => Float32Array.from({ length: DIMENSIONS }, (_, i) => Math.sin(seed + i / 1000) / 20);

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
    assert.deepEqual(second.get('café'), asKept(vector(2)));
    second.set('espresso bar', vector(3));
    second.set('café', vector(9)); // already known: neither replaced nor written twice
    second.save();

    const third = new EmbeddingCache(file);
    assert.equal(third.size, 3);
    assert.deepEqual(third.get('espresso bar'), asKept(vector(3)));
    assert.deepEqual(third.get('café'), asKept(vector(2)));
    assert.deepEqual(third.get('coffee joy'), asKept(vector(1)));
    assert.deepEqual(third.slab.read(third.ref('café')!), asKept(vector(2)), 'ref names the vector in the slab');
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

  it("TextIds' digest is SHA-1's first 8 bytes, as two little-endian words, for texts of any characters", () => {
    for (const text of ['', 'coffee joy', 'café ☕ 咖啡', 'a'.repeat(300), '\u{1f600}\t\n']) {
      const sha1 = createHash('sha1').update(text, 'utf8').digest();
      assert.deepEqual(digest(text), [sha1.readUInt32LE(0), sha1.readUInt32LE(4)], text);
    }
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
