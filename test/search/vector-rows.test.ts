import assert from 'node:assert/strict';
import { DIMENSIONS } from '../../src/search/embedder';
import { VectorRows, type QueryHandle } from '../../src/search/vector-rows';
import { asKept, dot, seeded, unitVector } from '../helpers/search-fakes';

describe('vector rows (unit vectors as int16 rows in a WebAssembly memory, cosines by SIMD kernels)', () => {
  it('keeps each component to 1/32,767 as the memory grows past its first 16 MiB, and gives cosines within 1e-4 of float64 sums', () => {
    const rows = new VectorRows();
    const random = seeded(16);
    // 16 MiB is 21,845 rows of 768 bytes: these grow the memory twice.
    const kept = Array.from({ length: 30_000 }, () => unitVector(random));
    const numbers = kept.map((v) => rows.add(v));
    assert.deepEqual(numbers.slice(0, 3), [0, 1, 2]);
    assert.equal(rows.size, kept.length);
    const query = unitVector(random);
    const gloss = unitVector(random);
    const [q, g] = [rows.query(query), rows.query(gloss)];
    for (const i of [0, 1, 21_844, 21_845, 29_999]) {
      assert.deepEqual(rows.read(i), asKept(kept[i]), `vector ${i} read back`);
      assert.ok(Math.abs(rows.dot(i, q) - dot(kept[i], query)) < 1e-4, `vector ${i}: ${rows.dot(i, q)} against ${dot(kept[i], query)}`);
      assert.equal(rows.dot2(i, q, g), rows.dot(i, q), `vector ${i}: dot2's first is dot's`);
      assert.equal(rows.second, rows.dot(i, g), `vector ${i}: dot2's second is dot's`);
      assert.ok(Math.abs(rows.second - dot(kept[i], gloss)) < 1e-4);
    }
    // A vector's cosine with itself, across many.
    for (let i = 0; i < kept.length; i += 997) assert.ok(Math.abs(rows.dot(i, rows.query(kept[i])) - 1) < 1e-4, `vector ${i} with itself`);
    const into = new Float32Array(DIMENSIONS);
    assert.equal(rows.read(7, into), into, 'read into the array given');
  });

  it('keeps each component as round(32,767·x) exactly as Math.round does (halves up), held within ±32,767, NaN as 0, whatever the value', () => {
    const rows = new VectorRows();
    const random = seeded(33);
    const expected = (x: number) => {
      const step = Math.max(-32_767, Math.min(32_767, Math.round(x * 32_767)));
      return Number.isNaN(step) ? 0 : step + 0; // (an int16 has no -0)
    };
    // Halves of a step (k + 0.5 and their float32 neighbours), values past ±1, and the odd ones.
    const odd: number[] = [0, -0, 1, -1, 0.5, -0.5, 1e-9, -1e-9, 1.5, -2, 1e30, -1e30, Infinity, -Infinity, NaN, 2 ** -24, -(2 ** -24)];
    for (let k = -32_768; k < 32_768; k += 97) {
      const half = Math.fround((k + 0.5) / 32_767);
      odd.push(half, Math.fround(half * (1 + 2 ** -23)), Math.fround(half * (1 - 2 ** -23)));
    }
    const vectors: Float32Array[] = [];
    for (let at = 0; at < odd.length; at += DIMENSIONS) {
      const v = Float32Array.from({ length: DIMENSIONS }, (_, i) => (at + i < odd.length ? odd[at + i] : random() * 2 - 1));
      vectors.push(v);
    }
    for (let n = 0; n < 200; n++) vectors.push(unitVector(random));
    for (const v of vectors) {
      const row = rows.add(v);
      const back = rows.read(row);
      for (let i = 0; i < DIMENSIONS; i++) assert.equal(Math.round(back[i] * 32_767), expected(v[i]), `component ${i} of vector ${row}: ${v[i]}`);
    }
    assert.throws(() => rows.add(new Float32Array(DIMENSIONS - 1)), /components/);
  });

  it('a component past ±1 (no unit vector has one) is kept as ±1; a query handle overwritten by 16 later queries throws rather than read another query', () => {
    const rows = new VectorRows();
    const big = new Float32Array(DIMENSIONS).fill(0.01);
    big[0] = 1.5;
    big[1] = -2;
    rows.add(big);
    const back = rows.read(0);
    assert.equal(back[0], 1);
    assert.equal(back[1], -1);
    const unit = new Float32Array(DIMENSIONS);
    unit[0] = 1;
    const first = rows.query(unit);
    assert.ok(Math.abs(rows.dot(0, first) - 1) < 1e-6);
    const later: QueryHandle[] = [];
    for (let i = 0; i < 15; i++) later.push(rows.query(unit));
    assert.ok(Math.abs(rows.dot(0, first) - 1) < 1e-6, 'still held after 15 more');
    later.push(rows.query(unit));
    assert.throws(() => rows.dot(0, first), /query 0 was overwritten/);
    assert.throws(() => rows.dot2(0, later[15], first), /overwritten/);
    assert.ok(Math.abs(rows.dot(0, later[15]) - 1) < 1e-6);
  });
});
