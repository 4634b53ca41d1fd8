/**
 * The keyword ranker's score (src/discovery/search.ts, computed there in SQL by Postgres) for one
 * label, computed in the application: the OpenSearch engine retrieves keyword candidates from its
 * own index and scores them here, so that both engines weigh a keyword match the same way.
 *
 *   exact     = 1 when the label is the query's words run together
 *   contained = 0.6 + 0.35·|joined| / |label| when the label holds them run together
 *   coverage  = mean over the query's words of 1 (inside the label) or their word similarity to it
 *   fuzzy     = word similarity of the joined words to the label
 *   topical   = 1 when the category and label match the query's words (full text, English stems)
 *   score     = min(1, max(exact, contained, 0.85·coverage·(0.7 + 0.3·min(1, |joined| / |label|)), 0.75·fuzzy, 0.3·topical))
 * and a label is a keyword hit only when exact, contained, coverage ≥ 0.5, fuzzy ≥ 0.45 or topical.
 *
 * Word similarity is pg_trgm's: the trigrams of the word against the best run of consecutive
 * trigrams of the label, as |common| / |union| (each word padded with two spaces in front and one
 * behind, letters and digits only). Postgres finds that run greedily; this looks at every run
 * that starts and ends on a common trigram, so it can only find as good a run or a better one.
 */

/** The trigrams of a text in order, word after word, as pg_trgm makes them (lower case, letters and digits). */
export function trigrams(text: string): string[] {
  const out: string[] = [];
  for (const word of text.toLowerCase().split(/[^a-z0-9]+/)) {
    if (!word) continue;
    const padded = `  ${word} `;
    for (let i = 0; i + 3 <= padded.length; i++) out.push(padded.slice(i, i + 3));
  }
  return out;
}

/**
 * A trigram as a number: its three characters (space, a–z, 0–9: all pg_trgm keeps here) in base
 * 37. Scoring hundreds of labels compares trigrams, and numbers need no string for each.
 */
function charCode(c: number): number {
  if (c >= 97 && c <= 122) return c - 96; // a–z: 1–26
  if (c >= 48 && c <= 57) return c - 21; // 0–9: 27–36
  return 0; // anything else parts words, as a space
}

/** The trigrams of a text as numbers (`trigramCode`), in the order and with the padding of `trigrams`. */
export function trigramCodes(text: string, out: number[] = []): number[] {
  out.length = 0;
  const lower = text.toLowerCase();
  let a = 0;
  let b = 0;
  let inWord = false;
  for (let i = 0; i <= lower.length; i++) {
    const c = i < lower.length ? charCode(lower.charCodeAt(i)) : 0;
    if (c === 0) {
      // A word ends: its last trigram, padded with one space behind.
      if (inWord) out.push(a * 1369 + b * 37);
      inWord = false;
      continue;
    }
    if (!inWord) {
      // A word starts with two spaces in front.
      a = 0;
      b = 0;
      inWord = true;
    }
    out.push(a * 1369 + b * 37 + c);
    a = b;
    b = c;
  }
  return out;
}

/** The number of a trigram as `trigrams` gives it (three characters of space, a–z, 0–9). */
export function trigramCode(gram: string): number {
  return charCode(gram.charCodeAt(0)) * 1369 + charCode(gram.charCodeAt(1)) * 37 + charCode(gram.charCodeAt(2));
}

/** Each query word's trigrams, as a set (a search scores hundreds of labels against the same few words). */
const ownTrigrams = new Map<string, Set<number>>();

function trigramSet(word: string): Set<number> {
  let own = ownTrigrams.get(word);
  if (!own) {
    if (ownTrigrams.size >= 10_000) ownTrigrams.clear();
    ownTrigrams.set(word, (own = new Set(trigramCodes(word))));
  }
  return own;
}

/** Scratch arrays (nothing here waits, so one of each serves every call). */
const sequence: number[] = [];
const labelSequence: number[] = [];
/**
 * Per trigram code (37³ of them), the run of `similarity` that last counted it: a run's distinct
 * trigrams are counted without a list to search (a label scored against a query word looks at
 * some hundred runs; a search scores a few hundred labels).
 */
const countedIn = new Uint32Array(37 ** 3);
let run = 0;

/** A new run for `countedIn` (the table cleared once its stamps would wrap). */
function nextRun(): void {
  if (++run === 0xffffffff) {
    countedIn.fill(0);
    run = 1;
  }
}

/** pg_trgm's word_similarity(word, text), in [0, 1]. */
export function wordSimilarity(word: string, text: string): number {
  return similarity(trigramSet(word), trigramCodes(text, sequence));
}

/** Word similarity of a word's trigrams (`own`) to a text's, in order (`trigramCodes`). */
function similarity(own: Set<number>, sequence: number[]): number {
  if (own.size === 0) return 0;
  let best = 0;
  for (let start = 0; start < sequence.length; start++) {
    if (!own.has(sequence[start])) continue;
    nextRun();
    let distinct = 0;
    let common = 0;
    for (let end = start; end < sequence.length; end++) {
      const t = sequence[end];
      const mine = own.has(t);
      if (countedIn[t] !== run) {
        countedIn[t] = run;
        distinct++;
        if (mine) common++;
      }
      if (mine) best = Math.max(best, common / (own.size + distinct - common));
    }
    if (best === 1) break;
  }
  return best;
}

/**
 * The most `similarity` can give: the share of the word's trigrams that the text holds (a run
 * holds no more of them, and its union has all of the word's). One pass, no run looked at.
 */
function similarityBound(own: Set<number>, sequence: number[]): number {
  if (own.size === 0) return 0;
  nextRun();
  let held = 0;
  for (const t of sequence) {
    if (countedIn[t] === run || !own.has(t)) continue;
    countedIn[t] = run;
    held++;
  }
  return held / own.size;
}

/** pg_trgm.word_similarity_threshold as the keyword ranker's connection sets it. */
export const FUZZY_THRESHOLD = 0.45;

/**
 * The keyword score of a label for the query's words (as `queryWords` gives them), or undefined
 * when the label is no keyword hit. `topical`: whether the name's full-text document matches, or
 * how to find out (asked only when it can change the score: it adds a floor of 0.3, which a
 * label matched otherwise at 0.3 or more does not need).
 */
export function keywordScore(label: string, words: string[], topical: boolean | (() => boolean)): number | undefined {
  if (words.length === 0) return undefined;
  const joined = words.join('');
  const exact = label === joined ? 1 : 0;
  const contained = label.includes(joined) ? 0.6 + (0.35 * joined.length) / label.length : 0;
  // The label's trigrams, made once for all the words compared with it.
  let codes: number[] | undefined;
  const labelCodes = () => (codes ??= trigramCodes(label, labelSequence));
  const coverage = words.reduce((sum, w) => sum + (label.includes(w) ? 1 : similarity(trigramSet(w), labelCodes())), 0) / words.length;
  const held = exact > 0 || contained > 0 || coverage >= 0.5;
  const known = Math.max(exact, contained, 0.85 * coverage * (0.7 + 0.3 * Math.min(1, joined.length / label.length)));
  // The joined words' similarity counts only when it can raise the score or make the label a hit:
  // a label it cannot (by its bound, or being past the most it can add) is scored without it
  // (most of the labels a search scores; finding the best run is most of a label's cost).
  let fuzzy = 0;
  if (!(held && known >= 0.75)) {
    const own = trigramSet(joined);
    const bound = similarityBound(own, labelCodes());
    if (0.75 * bound > known || (!held && bound >= FUZZY_THRESHOLD)) fuzzy = similarity(own, labelCodes());
  }
  const matched = held || fuzzy >= FUZZY_THRESHOLD;
  const base = Math.max(known, 0.75 * fuzzy);
  const isTopical = matched && base >= 0.3 ? false : typeof topical === 'function' ? topical() : topical;
  if (!matched && !isTopical) return undefined;
  const score = Math.min(1, Math.max(base, isTopical ? 0.3 : 0));
  return Math.round(score * 10_000) / 10_000;
}
