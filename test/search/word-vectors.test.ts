import assert from 'node:assert/strict';
import { WordVectors } from '../../src/search/word-vectors';
import { dot, seeded, unitVector } from '../helpers/search-fakes';

describe('word vectors (the words of the names and their senses, by word number)', () => {
  it("gives each word's cosine and its senses' with a query (within 1e-4: int16 rows), and keeps a word's first vectors", () => {
    const table = new WordVectors();
    const random = seeded(7);
    const query = unitVector(random);
    const kept = new Map<string, Float32Array[]>();
    // 3,000 words of up to 3 senses: ~7,500 rows.
    for (let i = 0; i < 3_000; i++) {
      const rows = Array.from({ length: 1 + (i % 4) }, () => unitVector(random));
      kept.set(`word${i}`, rows);
      table.add(`word${i}`, rows[0], rows.slice(1));
    }
    table.add('word5', unitVector(random), []);
    assert.equal(table.size, 3_000);
    assert.equal(table.has('word2999'), true);
    assert.equal(table.id('nowhere'), undefined);
    const gloss = unitVector(random);
    const [q, g] = [table.query(query), table.query(gloss)];
    for (const [word, rows] of kept) {
      const id = table.id(word)!;
      assert.equal(table.senses(id), rows.length - 1, word);
      rows.forEach((row, k) => assert.ok(Math.abs(table.dot(id, k, q) - dot(row, query)) < 1e-4, `${word} row ${k}`));
      assert.equal(table.dot2(id, q, g), table.dot(id, 0, q), `${word}: dot2's first`);
      assert.equal(table.second, table.dot(id, 0, g), `${word}: dot2's second`);
    }
  });
});
