/**
 * Keyword retrieval over one environment's labels, in the search process's memory: the embedded
 * engine's keyword candidates without a Postgres round trip. It answers the same probes as the
 * keyword ranker's SQL (src/discovery/search.ts) and scores with the same formula
 * (keyword-score.ts, which the OpenSearch engine uses too):
 *   - the label equal to the query's words run together (looked up by name, one per TLD);
 *   - labels holding a word, the joined words or a word's variant (`%word%`): the label trigrams
 *     of the word, the rarest list scanned and each label checked (first by its trigram signature,
 *     64 bits per name, so that most of a long list is passed over without reading a label);
 *   - labels close to a word by pg_trgm's word similarity (typos): a label with word similarity
 *     s ≥ 0.45 holds at least ⌈0.45·n⌉ of the word's n trigrams, so it is in two of the
 *     n − ⌈0.45·n⌉ + 2 rarest lists (pigeonhole); those are scanned, counting per name, and
 *     only a name they hold often enough is checked;
 *   - the full-text (`topical`) match: every stem of the query's words (English Porter2, the
 *     Snowball stemmer Postgres' `english` configuration uses, less Postgres' own stop words) among
 *     the stems of the label and of its category.
 * Each probe stops at PROBE_LIMIT names, as the SQL's does.
 *
 * Lists are appended to as names come and are cleaned lazily: a name that leaves counts as stale
 * in each of its lists, and a list is filtered once half of it is stale. Readers check every
 * slot against its current label, so a stale or repeated entry is never a wrong answer.
 */
import { grown } from './typed-arrays';
import { stem } from 'porter2';
import type { DataSource } from 'typeorm';
import { labelOf } from '../discovery/inventory';
import { PROBE_LIMIT, type KeywordOptions } from '../discovery/search';
import { FUZZY_THRESHOLD, keywordScore, trigramCode, trigramCodes, wordSimilarity } from './keyword-score';
import { FREQUENT } from './spelling';
import { Lists } from './slot-lists';

/** A label's or a query's words as Postgres' parser splits them here (letters and digits). */
const tokens = (text: string) => text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);

/**
 * The stems Postgres' `english` configuration would index or query for these words: a word of
 * letters is dropped when it is a stop word, else stemmed (Porter2, Snowball's English stemmer,
 * as Postgres'); a word with digits (Postgres' `numword`) is kept as it is. The `porter2`
 * package: ~0.7 µs a label here against wink-porter2-stemmer's ~9 (a 1M-name start stems every
 * label), and it agrees with Postgres where wink's did not (Porter2's y rules: `kayayers`).
 */
export function stems(text: string, stopWords: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  for (const token of tokens(text)) {
    if (/[0-9]/.test(token)) out.add(token);
    else if (!stopWords.has(token)) out.add(stem(token));
  }
  return [...out];
}

/**
 * Postgres' own English stop words, asked of Postgres once: the words of wordsninja's frequency
 * list (which holds every one of them) that `to_tsvector('english', …)` leaves out. So the
 * full-text match here drops exactly the words the SQL's does, with whatever stop list the
 * server has.
 */
export async function postgresStopWords(dataSource: DataSource): Promise<Set<string>> {
  const words = FREQUENT.filter((w) => /^[a-z]{1,12}$/.test(w));
  // Raw SQL: to_tsvector, which TypeORM does not express.
  const rows = (await dataSource.query(`SELECT w FROM unnest($1::text[]) AS w WHERE to_tsvector('english', w) = ''::tsvector`, [words])) as Array<{ w: string }>;
  return new Set(rows.map((r) => r.w));
}


/** A stem's list of labels is looked up in a search only up to this length (`topicalTest`). */
const SHORT_STEM_LIST = 4_096;

/**
 * A trigram's bit in a label's signature (64 bits, two 32-bit words): the signature of a label
 * holding a word has every bit of the word's trigrams, so a label whose signature lacks one is
 * passed over without reading it (most of a long trigram list, at 1M names).
 */
const bitOf = (code: number) => Math.imul(code, 0x9e3779b1) >>> 26;

/** The signature of these trigrams: [low word, high word]. */
function signature(codes: Iterable<number>): [number, number] {
  let low = 0;
  let high = 0;
  for (const code of codes) {
    const bit = bitOf(code);
    if (bit < 32) low |= 1 << bit;
    else high |= 1 << (bit - 32);
  }
  return [low, high];
}

/** Scratch array for a label's trigrams (the index never waits between using and reading it). */
const scratch: number[] = [];

export interface LabelHit {
  slot: number;
  /** The keyword score (keyword-score.ts). */
  score: number;
  /** The name the slot held when it was scored (`entry(slot)`): a caller that waits before reading the slot can tell whether it still does. */
  name: string;
}

export class LabelIndex {
  /**
   * Each slot's name (the caller's string, not a copy): its label is what comes before the first
   * dot (`labelOf`), read when it is scored, so that no label string is kept beside the name
   * (~24 MiB at 1M names), nor its TLD.
   */
  private readonly names: Array<string | undefined> = [];
  private readonly categoryOf: Array<string | undefined> = [];
  /** Label trigrams (pg_trgm's, padded; as numbers, `trigramCode`) → slots. */
  private readonly grams = new Lists<number>((slot, gram) => this.names[slot] !== undefined && trigramCodes(this.label(slot)!, scratch).includes(gram));
  /** Each slot's label signature (`signature`): words 2·slot and 2·slot + 1; zero for a free slot. */
  private signatures = new Uint32Array(0);
  private readonly labelStems = new Lists<string>((slot, s) => this.names[slot] !== undefined && stems(this.label(slot)!, this.stopWords).includes(s));
  /** Each category's name (the one string its slots' `categoryOf` share), stems and how many names it holds. */
  private readonly categories = new Map<string, { name: string; stems: Set<string>; names: number }>();
  /** Each category's slots, as the other lists (4 bytes a name: a Set of them cost ~40, ~38 MiB at 1M names). */
  private readonly categorySlots = new Lists<string>((slot, category) => this.categoryOf[slot] === category);
  /** Per slot, how many of the lists `similar` scans hold it (zero between calls). */
  private counts = new Uint8Array(0);
  /** The slots `similar` found, in the order found (scratch). */
  private found = new Uint32Array(0);
  /** The TLDs in use and how many names each, for the exact-label lookup. */
  private readonly tlds = new Map<string, number>();

  /**
   * `slotOf(name)`: the slot of a name on the market (the inventory index's); `stopWords`:
   * Postgres' English stop words (`postgresStopWords`).
   */
  constructor(
    private readonly slotOf: (name: string) => number | undefined,
    private readonly stopWords: ReadonlySet<string>,
  ) {}

  /** The slot's label, if it holds a name. */
  private label(slot: number): string | undefined {
    const name = this.names[slot];
    return name === undefined ? undefined : labelOf(name);
  }

  /**
   * Whether the slot's label holds `text` (read in the name, not a copy of the label): the first
   * place the name holds it ends within the label, as a later one cannot if the first does not.
   */
  private holds(slot: number, text: string): boolean {
    const name = this.names[slot];
    if (name === undefined) return false;
    const at = name.indexOf(text);
    return at >= 0 && at + text.length <= name.indexOf('.');
  }

  /** Takes a name into a slot, or moves a name already there to another category. */
  add(slot: number, name: string, category: string): void {
    if (this.names[slot] === name) {
      if (this.categoryOf[slot] !== category) {
        this.leaveCategory(slot);
        this.joinCategory(slot, category);
      }
      return;
    }
    if (this.names[slot] !== undefined) this.remove(slot);
    this.names[slot] = name;
    const label = labelOf(name);
    const keys = this.keysOf(label);
    for (const gram of keys.grams) this.grams.add(gram, slot);
    if (this.signatures.length < 2 * slot + 2) {
      this.signatures = grown(this.signatures, Math.max(2 * slot + 2, this.signatures.length * 2));
    }
    [this.signatures[2 * slot], this.signatures[2 * slot + 1]] = signature(keys.grams);
    for (const s of keys.stems) this.labelStems.add(s, slot);
    this.joinCategory(slot, category);
    const tld = name.slice(label.length + 1);
    this.tlds.set(tld, (this.tlds.get(tld) ?? 0) + 1);
  }

  /**
   * Gives back what growing by doubling left unused (the lists' and the signatures' slack): after
   * the first load, when the index is as large as it will be for a while. Later additions grow
   * the lists again as they need.
   */
  trim(): void {
    this.grams.trim();
    this.labelStems.trim();
    this.categorySlots.trim();
    const used = 2 * this.names.length;
    if (used < this.signatures.length) this.signatures = this.signatures.slice(0, used);
  }

  /** The slot's name left the market. */
  remove(slot: number): void {
    const name = this.names[slot];
    if (name === undefined) return;
    const label = labelOf(name);
    this.names[slot] = undefined;
    this.signatures[2 * slot] = this.signatures[2 * slot + 1] = 0;
    const keys = this.keysOf(label);
    for (const gram of keys.grams) this.grams.stale(gram);
    for (const s of keys.stems) this.labelStems.stale(s);
    this.leaveCategory(slot);
    const tld = name.slice(label.length + 1);
    const counted = this.tlds.get(tld) ?? 0;
    if (counted <= 1) this.tlds.delete(tld);
    else this.tlds.set(tld, counted - 1);
  }

  /** The keys a label is listed under: its distinct trigrams and its full-text stems (the same for add and remove). */
  private keysOf(label: string): { grams: Set<number>; stems: string[] } {
    return { grams: new Set(trigramCodes(label, scratch)), stems: stems(label, this.stopWords) };
  }

  private joinCategory(slot: number, category: string): void {
    let entry = this.categories.get(category);
    if (!entry) this.categories.set(category, (entry = { name: category, stems: new Set(stems(category.replace(/-/g, ' '), this.stopWords)), names: 0 }));
    // One string a category (at 1M names, a row's own copy each cost ~30 MB).
    this.categoryOf[slot] = entry.name;
    entry.names++;
    this.categorySlots.add(entry.name, slot);
  }

  private leaveCategory(slot: number): void {
    const category = this.categoryOf[slot];
    this.categoryOf[slot] = undefined;
    if (category === undefined) return;
    const entry = this.categories.get(category)!;
    this.categorySlots.stale(category);
    if (--entry.names === 0) this.categories.delete(category);
  }

  /** Up to `limit` slots whose label holds `word` (LIKE '%word%'). */
  containing(word: string, limit: number): number[] {
    const out: number[] = [];
    if (word.length < 3) {
      // No trigram inside: every label is looked at until enough hold it (short words are common).
      for (let slot = 0; slot < this.names.length && out.length < limit; slot++) if (this.holds(slot, word)) out.push(slot);
      return out;
    }
    // Labels hold letters and digits between their words' bounds: no label trigram has anything else.
    if (!/^[a-z0-9]+$/.test(word)) return out;
    let rarest: Uint32Array | undefined;
    const codes: number[] = [];
    for (let i = 0; i + 3 <= word.length; i++) {
      const code = trigramCode(word.slice(i, i + 3));
      codes.push(code);
      const list = this.grams.get(code);
      if (!rarest || list.length < rarest.length) rarest = list;
    }
    const [low, high] = signature(codes);
    const signatures = this.signatures;
    for (const slot of rarest!) {
      if (out.length >= limit) break;
      if ((signatures[2 * slot] & low) !== low || (signatures[2 * slot + 1] & high) !== high) continue;
      // A list may hold a slot twice (taken again before the list was cleaned): `out` is short.
      if (this.holds(slot, word) && !out.includes(slot)) out.push(slot);
    }
    return out;
  }

  /**
   * Up to `limit` slots whose label is close to `word` by word similarity (label %> word). A
   * label at similarity ≥ 0.45 holds at least `needed` = ⌈0.45·n⌉ of the word's n trigrams, so
   * at least two of them are among the word's n − needed + 2 rarest (pigeonhole). Those lists are
   * scanned, counting per slot how many hold it (a byte per slot); then each slot found, in the
   * order found, is passed over when fewer than two lists held it, or when that count and the
   * bits its signature has of the word's other trigrams cannot reach `needed`, and only then
   * scored. (At 1M names, `restaurant` finds ~90,000 slots, of which ~1 in 8 is held twice:
   * each slot's signature is a cache miss, the count is not.) A repeated or stale entry only
   * counts too much: it never hides a match.
   */
  similar(word: string, limit: number): number[] {
    const own = [...new Set(trigramCodes(word))].map((gram) => ({ bit: bitOf(gram), slots: this.grams.get(gram) })).sort((a, b) => a.slots.length - b.slots.length);
    if (own.length === 0) return [];
    const needed = Math.ceil(FUZZY_THRESHOLD * own.length);
    const scanned = own.slice(0, Math.min(own.length, own.length - needed + 2));
    // As many of the word's trigrams as a match holds, less those it can hold outside the scanned lists.
    const least = needed - (own.length - scanned.length);
    const others = own.slice(scanned.length).map(({ bit }) => bit);
    if (this.counts.length < this.names.length) this.counts = new Uint8Array(this.names.length * 2);
    const counts = this.counts;
    const total = scanned.reduce((sum, { slots }) => sum + slots.length, 0);
    if (this.found.length < total) this.found = new Uint32Array(total * 2);
    const found = this.found;
    let size = 0;
    for (const { slots } of scanned) {
      for (const slot of slots) {
        const count = counts[slot];
        if (count === 0) found[size++] = slot;
        if (count < 255) counts[slot] = count + 1;
      }
    }
    const signatures = this.signatures;
    const out: number[] = [];
    for (let i = 0; i < size; i++) {
      if (out.length >= limit) break;
      const slot = found[i];
      let common = counts[slot];
      if (common < least) continue;
      const low = signatures[2 * slot];
      const high = signatures[2 * slot + 1];
      for (const bit of others) if ((bit < 32 ? low >>> bit : high >>> (bit - 32)) & 1) common++;
      if (common < needed) continue;
      const label = this.label(slot);
      if (label !== undefined && wordSimilarity(word, label) >= FUZZY_THRESHOLD) out.push(slot);
    }
    for (let i = 0; i < size; i++) counts[found[i]] = 0;
    return out;
  }

  /** Whether the slot's label and category hold every one of the stems (the full-text match; `stems` of the query). */
  topical(slot: number, queryStems: string[]): boolean {
    const label = this.label(slot);
    if (label === undefined || queryStems.length === 0) return false;
    const ofCategory = this.categories.get(this.categoryOf[slot]!)?.stems;
    const ofLabel = stems(label, this.stopWords);
    return queryStems.every((s) => ofCategory?.has(s) || ofLabel.includes(s));
  }

  /**
   * `topical` for the many slots of one search: a stem's list is complete (every label holding
   * the stem is on it), so a slot whose category lacks a stem and whose label is not on that
   * stem's list is no match, found without splitting and stemming its label. Only the other
   * slots are checked by `topical` (a list may hold stale entries). Lists longer than
   * SHORT_STEM_LIST are not looked up (their set would cost more than it saves).
   */
  private topicalTest(queryStems: string[]): (slot: number) => boolean {
    const listed = queryStems.map((s) => {
      const list = this.labelStems.get(s);
      return list.length <= SHORT_STEM_LIST ? new Set(list) : undefined;
    });
    return (slot) => {
      const ofCategory = this.categories.get(this.categoryOf[slot]!)?.stems;
      for (let i = 0; i < queryStems.length; i++) if (listed[i] && !listed[i]!.has(slot) && !ofCategory?.has(queryStems[i])) return false;
      return this.topical(slot, queryStems);
    };
  }

  /** Up to `limit` slots that match the stems by full text (`isTopical`: `topicalTest`'s). */
  private topicalSlots(queryStems: string[], limit: number, isTopical: (slot: number) => boolean): number[] {
    const out: number[] = [];
    if (queryStems.length === 0) return out;
    // Whole categories that hold every stem; then the names whose label holds one of them.
    const seen = new Set<number>();
    for (const { name, stems: own } of this.categories.values()) {
      if (!queryStems.every((s) => own.has(s))) continue;
      for (const slot of this.categorySlots.get(name)) {
        if (out.length >= limit) return out;
        // (A list may hold a slot that has left the category, or twice.)
        if (this.categoryOf[slot] !== name || seen.has(slot)) continue;
        out.push(slot);
        seen.add(slot);
      }
    }
    for (const s of queryStems) {
      for (const slot of this.labelStems.get(s)) {
        if (out.length >= limit) return out;
        if (!seen.has(slot) && isTopical(slot)) out.push(slot);
        seen.add(slot);
      }
    }
    return out;
  }

  /**
   * The keyword ranker's hits for the query's words (as `queryWords` gives them), best first:
   * the same probes and score as its SQL, and its order among equal scores (listed first, then
   * the shorter name). `entry(slot)`: the slot's name and availability.
   */
  search(words: string[], limit: number, options: KeywordOptions, entry: (slot: number) => { name: string; available: boolean } | undefined): LabelHit[] {
    if (words.length === 0) return [];
    const { fuzzy = () => true, variants = () => [] } = options;
    const joined = words.join('');
    const queryStems = stems(words.join(' '), this.stopWords);
    const candidates = new Set<number>();
    const take = (slots: Iterable<number>) => {
      for (const slot of slots) candidates.add(slot);
    };
    for (const tld of this.tlds.keys()) {
      const slot = this.slotOf(`${joined}.${tld}`);
      if (slot !== undefined) candidates.add(slot);
    }
    // Each of these is topical (checked just now): its score need not stem its label again.
    const isTopical = this.topicalTest(queryStems);
    const topicalNow = new Set(this.topicalSlots(queryStems, PROBE_LIMIT, isTopical));
    take(topicalNow);
    // As the SQL: words under 3 letters are everywhere, and the joined words of a phrase are probed by each word's similarity.
    for (const w of new Set([joined, ...words.filter((w) => w.length >= 3)])) {
      take(this.containing(w, PROBE_LIMIT));
      if (w.length >= 4 && fuzzy(w) && (w !== joined || words.length === 1)) take(this.similar(w, PROBE_LIMIT));
      for (const v of w === joined && words.length > 1 ? [] : variants(w)) take(this.containing(v, PROBE_LIMIT));
    }
    const hits: Array<LabelHit & { available: boolean }> = [];
    for (const slot of candidates) {
      const label = this.label(slot);
      const named = entry(slot);
      if (label === undefined || !named) continue;
      const score = keywordScore(label, words, () => topicalNow.has(slot) || isTopical(slot));
      if (score !== undefined) hits.push({ slot, score, name: named.name, available: named.available });
    }
    hits.sort((a, b) => b.score - a.score || Number(b.available) - Number(a.available) || a.name.length - b.name.length || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return hits.slice(0, limit).map(({ slot, score, name }) => ({ slot, score, name }));
  }
}
