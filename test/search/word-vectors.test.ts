import assert from 'node:assert/strict';
import { WordVectors } from '../../src/search/word-vectors';
import { dot, seeded, unitVector } from '../helpers/search-fakes';

describe('word vectors (the words of the names and their senses, by word number)', () => {
  it("gives each word's cosine and its senses' with a query, across many blocks, and keeps a word's first vectors", () => {
    const table = new WordVectors();
    const random = seeded(7);
    const query = unitVector(random);
    const kept = new Map<string, Float32Array[]>();
    // 3,000 words of up to 3 senses: ~7,500 rows, past the first block of 4,096.
    for (let i = 0; i < 3_000; i++) {
      const rows = Array.from({ length: 1 + (i % 4) }, () => unitVector(random));
      kept.set(`word${i}`, rows);
      table.add(`word${i}`, rows[0], rows.slice(1));
    }
    table.add('word5', unitVector(random), []);
    assert.equal(table.size, 3_000);
    assert.equal(table.has('word2999'), true);
    assert.equal(table.id('nowhere'), undefined);
    for (const [word, rows] of kept) {
      const id = table.id(word)!;
      assert.equal(table.senses(id), rows.length - 1, word);
      rows.forEach((row, k) => assert.ok(Math.abs(table.dot(id, k, query) - dot(row, query)) < 1e-6, `${word} row ${k}`));
    }
  });
});
