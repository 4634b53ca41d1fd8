import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DIMENSIONS } from '../../src/search/embedder';
import { EmbeddingCache } from '../../src/search/embedding-cache';

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
});
