/**
 * The words of one environment's names, numbered, and each slot's word numbers in one typed array:
 * a search that asks which names hold a word (`InventoryIndex.namesWith`, a few hundred slots)
 * reads a slot's 16 bytes, not its entry, its words' array and each word's string (at 1M names
 * each of those is a cache miss: ~1.3 µs a slot, against ~0.3).
 */
import { grown } from './typed-arrays';

/**
 * Each distinct word of the names: one string (the entries' `words` share it: at 1M names, a
 * split label's own copies of its words cost ~80 MB) and a number. A word and its number go when
 * no slot holds it any more; the number is given to the next new word.
 */
export class WordTable {
  private readonly numbers = new Map<string, number>();
  private readonly strings: string[] = [];
  /** How many times slots hold each number (a label may hold a word twice). */
  private holders = new Uint32Array(1024);
  /** Each number's row in the scorer's word table plus one, 0 until found (`row`). */
  private rows = new Int32Array(1024);
  private readonly free: number[] = [];

  /** The word's number, if a slot holds it. */
  number(word: string): number | undefined {
    return this.numbers.get(word);
  }

  /** The word of a number in use. */
  word(number: number): string {
    return this.strings[number];
  }

  /** One more slot holds the word: its number (`word` gives its one string). */
  hold(word: string): number {
    let number = this.numbers.get(word);
    if (number === undefined) {
      number = this.free.pop() ?? this.strings.length;
      this.strings[number] = word;
      this.numbers.set(word, number);
      if (number >= this.holders.length) {
        this.holders = grown(this.holders, this.holders.length * 2);
        this.rows = grown(this.rows, this.holders.length);
      }
      this.rows[number] = 0;
    }
    this.holders[number]++;
    return number;
  }

  /**
   * The word's row in the scorer's table (WordVectors), kept by its number once `find` has found
   * it (a word without one yet is asked again next time): a search looks up a few hundred words,
   * and a Map of the whole vocabulary by string costs ~0.5 µs a look-up at 1M names.
   */
  row(number: number, find: (word: string) => number | undefined): number | undefined {
    const known = this.rows[number];
    if (known > 0) return known - 1;
    const row = find(this.strings[number]);
    if (row !== undefined) this.rows[number] = row + 1;
    return row;
  }

  /** A slot that held the word (as `hold` gave it) holds it no more. */
  release(word: string): void {
    const number = this.numbers.get(word);
    if (number === undefined || --this.holders[number] > 0) return;
    this.numbers.delete(word);
    this.strings[number] = '';
    this.free.push(number);
  }
}

/**
 * Each slot's word numbers, WIDTH a slot (a label rarely has more words; a slot that has is
 * flagged and its entry read for the rest), and how many.
 */
export class SlotWords {
  static readonly WIDTH = 4;
  private numbers = new Uint32Array(0);
  private counts = new Uint8Array(0);

  /** Sets the slot's words (their numbers in the label's order). */
  set(slot: number, numbers: number[]): void {
    const width = SlotWords.WIDTH;
    if (this.counts.length <= slot) {
      // By a quarter (at 1M names a doubling past the first load would keep ~17 MB spare).
      const size = Math.max(slot + 1, Math.ceil(this.counts.length * 1.25) + 1024);
      this.numbers = grown(this.numbers, size * width);
      this.counts = grown(this.counts, size);
    }
    for (let i = 0; i < width; i++) this.numbers[slot * width + i] = i < numbers.length ? numbers[i] : 0;
    this.counts[slot] = Math.min(numbers.length, 255);
  }

  /** The slot holds no name. */
  clear(slot: number): void {
    if (slot < this.counts.length) this.counts[slot] = 0;
  }

  /**
   * Whether the slot holds the word: 1 yes, 0 no, -1 when its first WIDTH words are not it but it
   * has more (the caller reads its entry).
   */
  holds(slot: number, number: number): 1 | 0 | -1 {
    if (slot >= this.counts.length) return 0;
    const count = this.counts[slot];
    const width = SlotWords.WIDTH;
    const base = slot * width;
    for (let i = 0; i < count && i < width; i++) if (this.numbers[base + i] === number) return 1;
    return count > width ? -1 : 0;
  }

  /**
   * Copies the slot's word numbers into `out` (at least WIDTH long) and gives how many; -1 for a
   * slot of more than WIDTH words (its entry's words are read instead).
   */
  read(slot: number, out: Uint32Array): number {
    const count = slot < this.counts.length ? this.counts[slot] : 0;
    if (count > SlotWords.WIDTH) return -1;
    const base = slot * SlotWords.WIDTH;
    for (let i = 0; i < count; i++) out[i] = this.numbers[base + i];
    return count;
  }

  /** Gives back what growing by doubling left unused, down to `slots`. */
  trim(slots: number): void {
    if (slots >= this.counts.length) return;
    this.numbers = this.numbers.slice(0, slots * SlotWords.WIDTH);
    this.counts = this.counts.slice(0, slots);
  }
}

/**
 * An engine's candidates' words by number (the embedded engine's, InventoryIndex.numbered): the
 * scorer reads a candidate's words without its entry, and finds each word's row by its number.
 */
export interface NumberedWords {
  /**
   * Copies the slot's word numbers into `out` (at least SlotWords.WIDTH long); how many, or -1 to
   * read the entry's words instead (a label of more words, or a slot that no longer holds `entry`).
   */
  read(slot: number, entry: object, out: Uint32Array): number;
  word(number: number): string;
  /** The word's row in the scorer's table (`find`: looks it up by the word, asked until it has one). */
  row(number: number, find: (word: string) => number | undefined): number | undefined;
}
