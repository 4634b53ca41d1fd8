/**
 * The names' words by number (src/search/slot-words.ts): a word's number lives while some slot
 * holds the word, then goes to the next new word with nothing of the old one (its row); a slot's
 * numbers read back as set, a label of more than WIDTH words read from its entry.
 */
import assert from 'node:assert/strict';
import { SlotWords, WordTable } from '../../src/search/slot-words';

describe('search index: words by number', () => {
  it('WordTable: one number a word while any slot holds it (a label holding it twice counts twice), then given to the next new word without its row', () => {
    const table = new WordTable();
    const coffee = table.hold('coffee');
    assert.equal(table.hold('coffee'), coffee, 'the same word, the same number');
    const bar = table.hold('bar');
    assert.notEqual(bar, coffee);
    assert.equal(table.word(coffee), 'coffee');
    const rows = new Map([
      ['coffee', 7],
      ['bar', 9],
      ['tea', 11],
    ]);
    let lookups = 0;
    const find = (w: string) => (lookups++, rows.get(w));
    assert.equal(table.row(coffee, find), 7);
    assert.equal(table.row(coffee, find), 7);
    assert.equal(lookups, 1, 'the row is kept by number once found');

    // Held twice (two slots, or one label with it twice): still held after one release.
    table.release('coffee');
    assert.equal(table.number('coffee'), coffee);
    table.release('coffee');
    assert.equal(table.number('coffee'), undefined, 'no slot holds it: the word and its number go');
    const tea = table.hold('tea');
    assert.equal(tea, coffee, 'the freed number goes to the next new word');
    assert.equal(table.word(tea), 'tea');
    assert.equal(table.row(tea, find), 11, "tea's own row, not coffee's kept one");
    assert.equal(lookups, 2);
    assert.equal(table.number('bar'), bar, 'other words keep theirs');
    // A word without a row yet is asked again next time.
    const zither = table.hold('zither');
    assert.equal(table.row(zither, find), undefined);
    rows.set('zither', 13);
    assert.equal(table.row(zither, find), 13);
  });

  it('WordTable: numbers stay distinct and reused as thousands of words come and go', () => {
    const table = new WordTable();
    const held = new Map<string, number>();
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 3_000; i++) held.set(`w${round}-${i}`, table.hold(`w${round}-${i}`));
      // Every other word of the round before leaves.
      for (let i = 0; i < 3_000; i += 2) {
        const word = `w${round - 1}-${i}`;
        if (!held.has(word)) continue;
        table.release(word);
        held.delete(word);
      }
    }
    const numbers = [...held.values()];
    assert.equal(new Set(numbers).size, numbers.length, 'no two held words share a number');
    for (const [word, number] of held) assert.equal(table.word(number), word);
    assert.ok(Math.max(...numbers) < held.size + 1_500, `numbers reused: the largest ${Math.max(...numbers)} for ${held.size} words`);
  });

  it('SlotWords: each slot reads back its numbers; a label of more than WIDTH words reads -1 (its entry is read), a cleared or unknown slot none', () => {
    const words = new SlotWords();
    words.set(0, [3, 1, 4]);
    words.set(70_000, [5]);
    words.set(2, [9, 2, 6, 5, 3]);
    const out = new Uint32Array(SlotWords.WIDTH);
    assert.equal(words.read(0, out), 3);
    assert.deepEqual([...out.subarray(0, 3)], [3, 1, 4]);
    assert.equal(words.holds(0, 4), 1);
    assert.equal(words.holds(0, 5), 0);
    assert.equal(words.read(70_000, out), 1);
    assert.equal(out[0], 5);
    assert.equal(words.read(2, out), -1, 'five words: read from the entry');
    assert.equal(words.holds(2, 6), 1, 'one of its first four');
    assert.equal(words.holds(2, 3), -1, 'maybe its fifth: the caller reads the entry');
    assert.equal(words.read(1, out), 0);
    assert.equal(words.read(10_000_000, out), 0);
    words.clear(0);
    assert.equal(words.read(0, out), 0);
    assert.equal(words.holds(0, 3), 0);
    words.trim(70_001);
    assert.equal(words.read(70_000, out), 1, 'kept by the trim');
  });
});
