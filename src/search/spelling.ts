/**
 * Query spelling: a query word that is neither a word of the inventory's names nor an English
 * word is taken for a typo and replaced by the closest known word (Damerau–Levenshtein: one
 * edit for words of 4–6 letters, two from 7 letters on; the words of the inventory before the
 * English list; among equals the more frequent English word). `cofee` → `coffee`, `restuarant`
 * → `restaurant`, `solar pannels` → `solar panels`. Corrected, a typo query is searched like a
 * literal one, and its meaning can be embedded.
 *
 * English words: Hunspell's en_US dictionary with its affix rules (nspell, dictionary-en), so
 * plurals and derived forms count, and the 100,000 most frequent words of the wordsninja list
 * (names and loanwords Hunspell lacks: `pinot`, `noir`; its rarer tail holds common typos).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import damerauLevenshtein from 'damerau-levenshtein';
import { distance as levenshtein } from 'fastest-levenshtein';
import { LRUCache } from 'lru-cache';
import nspell from 'nspell';
import { splitWords } from '../discovery/search';

/** wordsninja's English words, most frequent first (also where the keyword probes find Postgres' stop words). */
export const FREQUENT: readonly string[] = JSON.parse(readFileSync(require.resolve('wordsninja/words-en.json'), 'utf8'));
const RANK = new Map(FREQUENT.slice(0, 100_000).map((w, i) => [w, i]));
/** Correction targets from the English list, the frequent words only, by length. */
const TARGETS = new Map<number, string[]>();
for (const w of FREQUENT.slice(0, 40_000)) {
  if (!/^[a-z]{4,}$/.test(w)) continue;
  if (!TARGETS.has(w.length)) TARGETS.set(w.length, []);
  TARGETS.get(w.length)!.push(w);
}
const targetsNear = (length: number, limit: number) => Array.from({ length: 2 * limit + 1 }, (_, i) => TARGETS.get(length - limit + i) ?? []).flat();

function hunspell(): ReturnType<typeof nspell> {
  // dictionary-en is an ES module that exports only its files' contents; read the files themselves.
  const dir = (require.resolve.paths('dictionary-en') ?? []).map((p) => path.join(p, 'dictionary-en')).find((d) => existsSync(path.join(d, 'index.dic')));
  if (!dir) throw new Error('dictionary-en is not installed');
  return nspell(readFileSync(path.join(dir, 'index.aff')), readFileSync(path.join(dir, 'index.dic')));
}
let english: ReturnType<typeof nspell> | undefined;

function maxEdits(word: string): number {
  if (word.length < 4) return 0;
  return word.length < 7 ? 1 : 2;
}

const rank = (w: string) => RANK.get(w) ?? Number.MAX_SAFE_INTEGER;

function closest(word: string, candidates: Iterable<string>, limit: number): { word: string; edits: number } | undefined {
  let best: { word: string; edits: number } | undefined;
  for (const c of candidates) {
    if (Math.abs(c.length - word.length) > limit) continue;
    // Levenshtein (fast, bit-parallel) counts a transposition as two edits, so it is at most twice
    // Damerau–Levenshtein: above twice the limit a word cannot be within it. A cheap filter first.
    if (levenshtein(word, c) > 2 * limit) continue;
    const edits = damerauLevenshtein(word, c).steps;
    if (edits > limit) continue;
    if (!best || edits < best.edits || (edits === best.edits && rank(c) < rank(best.word))) best = { word: c, edits };
  }
  return best;
}

export class Speller {
  /** Words of the names on the market, with how many names hold each. */
  private readonly counts = new Map<string, number>();
  /** Corrections made, until the inventory's words change. */
  private readonly memo = new LRUCache<string, string>({ max: 10_000 });
  private readonly variantMemo = new LRUCache<string, string[]>({ max: 10_000 });

  /** Counts the words in (`delta` names more hold each) or out (fewer). */
  addWords(words: string[], delta = 1): void {
    for (const w of words) {
      const before = this.counts.get(w) ?? 0;
      const n = before + delta;
      if (n > 0) this.counts.set(w, n);
      else this.counts.delete(w);
      // A word's arrival or departure can change corrections.
      if ((before > 0) !== (n > 0) && this.memo.size > 0) this.memo.clear();
      if ((before > 0) !== (n > 0) && this.variantMemo.size > 0) this.variantMemo.clear();
    }
  }

  /** Whether some name on the market holds the word. */
  holds(word: string): boolean {
    return this.counts.has(word);
  }

  /** The words of the names on the market. */
  words(): IterableIterator<string> {
    return this.counts.keys();
  }

  /** A word of the names on the market. */
  isInventoryWord(word: string): boolean {
    return this.counts.has(word);
  }

  isKnown(word: string): boolean {
    english ??= hunspell();
    return this.counts.has(word) || RANK.has(word) || /\d/.test(word) || english.correct(word);
  }

  /** The word as it was probably meant, or the word itself. */
  correct(word: string): string {
    let corrected = this.memo.get(word);
    if (corrected === undefined) this.memo.set(word, (corrected = this.compute(word)));
    return corrected;
  }

  private compute(word: string): string {
    if (this.isKnown(word)) return word;
    const limit = maxEdits(word);
    if (limit === 0) return word;
    const inInventory = closest(word, this.counts.keys(), limit);
    if (inInventory?.edits === 1) return inInventory.word;
    const englishLimit = inInventory ? inInventory.edits - 1 : limit;
    const english = closest(word, targetsNear(word.length, englishLimit), englishLimit);
    return english?.word ?? inInventory?.word ?? word;
  }

  /**
   * Words of the inventory that share the word's stem: a common beginning of at least 5 letters
   * covering all of the shorter word but 2 letters at most (`jewel` for `jewelry`, `furnish` for
   * `furniture`, `program` for `programming`). None for a word of the inventory itself.
   */
  variants(word: string): string[] {
    if (word.length < 5 || this.counts.has(word)) return [];
    let found = this.variantMemo.get(word);
    if (!found) {
      found = [];
      const stem = word.slice(0, 5);
      for (const w of this.counts.keys()) {
        if (w.length < 5 || !w.startsWith(stem)) continue;
        let common = 5;
        while (common < Math.min(w.length, word.length) && w[common] === word[common]) common++;
        if (common >= Math.min(w.length, word.length) - 2) found.push(w);
      }
      this.variantMemo.set(word, found);
    }
    return found;
  }

  /** The query with each word corrected. */
  correctQuery(query: string): string {
    return splitWords(query)
      .map((w) => this.correct(w))
      .join(' ');
  }
}
