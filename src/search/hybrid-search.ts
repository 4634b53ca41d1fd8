/**
 * Hybrid search: candidates from keywords (the keyword ranker's probes and score: full text and
 * trigrams, over the labels in memory for the embedded engine, in OpenSearch for the other), from the name vectors (MiniLM cosine, exact scan or HNSW, for the query and for the
 * query with its WordNet definitions) and from the words of the names (the names holding the
 * query's WordNet expansions and the kinds its things are), merged and reranked by one documented scorer. The query is spell-corrected against the inventory's words
 * and English first (`cofee` → `coffee`), so a typo is searched like the word it meant.
 *
 * For each candidate name:
 *   keyword   = the keyword ranker's score of the corrected query (keyword-score.ts), in [0, 1] (0 if not a keyword hit),
 *               halved when the query's words occur in the label only inside its words (midWordOnly)
 *   name      = cosine(query, segmented label)                    "caffeine" · "espresso bar"
 *   word      = max over the label's words of cosine(query, word)  "caffeine" · "espresso"
 *   expansion = cosine(query, w) when a word w of the label is among the query's WordNet
 *               expansions (synonyms and definition words), else 0   "patisserie" → "pastry"
 *   gloss     = the best of name and word for the query followed by its WordNet definitions
 *               ("patisserie: a bakery specializing in French pastry"), 0 when WordNet has none
 *   sense     = max over the label's words and their first WordNet senses of cosine(query,
 *               "word, synonyms: definition")    "animal shelter" · "kennel, doghouse, dog house:
 *               outbuilding that serves as a shelter for a dog"; 0 for words WordNet lacks
 *   broader   = cosine(query, w) when a word w of the label names what the query's thing is a
 *               kind of (WordNet hypernyms: `tabby` → `cat`, `houseplant` → `flora`), halved two
 *               levels up, else 0
 *   meaning   = ½·max(name, word, gloss − 0.05, sense − 0.05) + ½·mean(max(name, word), gloss, sense),
 *               gloss = max(glossName, glossWord); a view WordNet cannot give (0) is left out of the mean
 *   semantic  = clamp((meaning + 0.3·expansion + 0.6·broader − 0.15) / 0.55, 0, 1)
 *   raw       = max(keyword, 0.5·keyword + 0.55·semantic + 0.15·keyword·semantic) + 0.01 if available
 *   score     = raw up to 0.8, above it 0.8 + 0.2·tanh((raw − 0.8) / 0.2): always below 1, order kept
 * so a name that matches both the words and the meaning beats one that matches either. The
 * weights were tuned on the `tune` half of data/search-queries.json and checked on the other.
 */
import { LRUCache } from 'lru-cache';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { isDomainName, labelOf, normaliseDomainName } from '../discovery/inventory';
import { MAX_QUERY_WORDS, MAX_RESULTS, queryWords, splitWords, type DomainSearch, type SearchHit } from '../discovery/search';
import type { ChangeFeed } from '../db/change-feed';
import type { Embedder } from './embedder';
import type { EmbeddingCache, EmbeddingLogReader } from './embedding-cache';
import type { EngineStatus } from './search-client';
import { InventoryIndex, type Entry } from './inventory-index';
import { WordVectors } from './word-vectors';
import { followListings } from './inventory-changes';
import { postgresStopWords } from './label-index';
import { SlotWords, type NumberedWords } from './slot-words';
import { baseForms, expansionWords, glossedQuery, senseTexts } from './lexicon';
import type { Speller } from './spelling';
import { broaderWords } from './taxonomy';

export const CANDIDATES = 50;
/** Names nearest the query with its WordNet definitions. */
export const GLOSS_CANDIDATES = 20;
/**
 * How wide the HNSW graph is searched for them (the query's own names: HNSW.expansion_search).
 * At 1M names, for the 116 labelled queries WordNet defines, breadth 64 finds 0.965 of their 20
 * nearest names (128: 0.988) in ~0.8 ms of the graph worker against ~1.3, and the answers are
 * the same for 119 of the 120 (bench/RESULTS.md, 2026-11-29 afternoon).
 */
export const GLOSS_BREADTH = 64;
/** The query's WordNet expansions whose names become candidates, and how many names each (also for each of its kinds). */
const EXPANSIONS = 6;
export const PER_EXPANSION = 20;
/** Below this a candidate is noise, not a weak match. */
const MIN_SCORE = 0.18;
/** How often the embedded engine syncs while it follows the change feed, for what the feed does not name. */
const POLL_MS = 2_000;
/** Names looked at to tell a run-together name from a typo (see corrected). */
const WHOLE_WORDS_PROBE = 20;

export interface Signals {
  keyword: number;
  name: number;
  word: number;
  /** The weight of the name's best word among the query's WordNet expansions (0 if none). */
  expansion: number;
  /** cosine(query with its WordNet definitions, segmented label), or of its best word; 0 without definitions. */
  glossName: number;
  glossWord: number;
  /** max over the label's words and their WordNet senses of cosine(query, "word, synonyms: definition"); 0 if WordNet knows none. */
  sense: number;
  /** cosine(query, w) for a word w of the label that names what the query's thing is a kind of, halved two levels up; else 0. */
  broader: number;
  available: boolean;
}

export function semanticScore(cosine: number): number {
  return Math.min(1, Math.max(0, (cosine - 0.15) / 0.55));
}

/**
 * How close the name's meaning is to the query's, as a cosine: half the best of the three views
 * (the name and its words, the query's definitions, the words' senses), half their mean. The
 * best view alone lets one near word win (`mechanic` → `car`: 0.54 to the query, but 0.23 to its
 * definitions and 0.39 to car's senses); the mean rewards a name that every view finds close
 * (`autogarage`: 0.52, 0.44 and 0.47).
 * A view that is missing (0: WordNet knows no definition of the query, or no sense of the
 * name's words) is left out of the mean rather than counted as far.
 */
export function meaningCosine(s: Signals): number {
  const direct = Math.max(s.name, s.word);
  const gloss = Math.max(s.glossName, s.glossWord);
  // The mean of the direct view and of the others that are not 0 (without an array: each of a
  // search's few hundred candidates is scored).
  let sum = direct;
  let views = 1;
  if (gloss !== 0) {
    sum += gloss;
    views++;
  }
  if (s.sense !== 0) {
    sum += s.sense;
    views++;
  }
  const best = Math.max(direct, gloss - 0.05, s.sense - 0.05);
  return 0.5 * best + 0.5 * (sum / views);
}

export function rerank(s: Signals): number {
  const semantic = semanticScore(meaningCosine(s) + 0.3 * s.expansion + 0.6 * s.broader);
  // A strong keyword or typo match stands on its own.
  const raw = Math.max(s.keyword, 0.5 * s.keyword + 0.55 * semantic + 0.15 * s.keyword * semantic) + (s.available ? 0.01 : 0);
  return squash(raw);
}

/** The identity up to 0.8, then bent smoothly below 1, so that strong matches keep their order rather than all reading 1. */
export function squash(raw: number): number {
  if (raw <= 0.8) return Math.max(0, raw);
  return 0.8 + 0.2 * Math.tanh((raw - 0.8) / 0.2);
}

/** What a keyword hit is worth when the query's words occur in the label only inside its words (`tea` in `byteai`). */
const MID_WORD = 0.5;

/** Where `wordBounds` puts the label's words' starts and ends (scratch: read before the next call, with no await between). */
const starts: number[] = [];
const ends: number[] = [];

/** The label, and where its words start and end in it (`live-test` → starts 0, 5; ends 4, 9) in `starts` and `ends`. */
function wordBounds(entry: Pick<Entry, 'name' | 'words'>): string {
  const label = labelOf(entry.name);
  starts.length = 0;
  ends.length = 0;
  let at = 0;
  for (const w of entry.words) {
    const found = label.indexOf(w, at);
    if (found < 0) continue;
    starts.push(found);
    ends.push((at = found + w.length));
  }
  return label;
}

/** Whether the word is one or more whole words of the label, run together (`livetest` in `live|test|one`). */
export function spansWords(entry: Pick<Entry, 'name' | 'words'>, word: string): boolean {
  const label = wordBounds(entry);
  for (let i = label.indexOf(word); i >= 0; i = label.indexOf(word, i + 1)) if (starts.includes(i) && ends.includes(i + word.length)) return true;
  return false;
}

/**
 * Whether the query's words that occur in the label all occur only in the middle of its words,
 * never where one of the label's words starts: `tea` in `byte|ai` (but not in `tea|house` or
 * `team|play`). False when none occurs (a hit by similarity or topic is left as it is).
 */
export function midWordOnly(entry: Pick<Entry, 'name' | 'words'>, words: string[]): boolean {
  const label = wordBounds(entry);
  let occurs = false;
  for (const q of words) {
    if (q.length < 3) continue;
    for (let i = label.indexOf(q); i >= 0; i = label.indexOf(q, i + 1)) {
      if (starts.includes(i)) return false;
      occurs = true;
    }
  }
  return occurs;
}

/** What a query means, worked out before its candidates are gathered (both engines). */
export interface Understanding {
  /** The query, spell-corrected, lower case. */
  corrected: string;
  words: string[];
  queryVector: Float32Array;
  /** The query followed by its WordNet definitions, when WordNet has some. */
  glossVector?: Float32Array;
  /** The inventory's words among the query's WordNet expansions, with their similarity to the query. */
  expansion: Map<string, number>;
  /** The inventory's words naming what the query's thing is a kind of: 1, or 0.5 two levels up. */
  broader: Map<string, number>;
}

/** A query's vectors (its own, and with its WordNet definitions when WordNet has some), its WordNet expansions and its kinds (word → level). */
type Meaning = readonly [Float32Array, Float32Array | undefined, ReadonlySet<string>, ReadonlyMap<string, number>];

/** The words of an environment's names on the market, as understanding a query needs them. */
export interface Vocabulary {
  readonly speller: Speller;
  /** Whether some name on the market holds the word. */
  hasWord(word: string): boolean;
  /** Where word and sense vectors are kept. */
  readonly cache: EmbeddingCache;
}

/** A candidate as an engine found it: the name's entry and its cosines to the query and its definitions (0 without a vector). */
export interface Found {
  entry: Entry;
  /** Its slot, when the engine numbers its words (Gathered.numbered). */
  slot?: number;
  name: number;
  glossName: number;
  /** The keyword ranker's score, 0 when it is no keyword hit. */
  keyword: number;
}

/** What an engine gathered for a query, and the understanding it worked from. */
export interface Gathered {
  found: Found[];
  /** The name the query was written as, when it is on the market. */
  named?: Entry;
  understanding: Understanding;
  cache: EmbeddingCache;
  /** The candidates' words by number (the embedded engine): read by slot rather than from each entry. */
  numbered?: NumberedWords;
}

/** A word's views of the query (HybridScorer.score). */
interface View {
  sense: number;
  word: number;
  glossWord: number;
  broader: number;
  expanded: number;
}

/**
 * What both engines share: the model, the word and sense vectors, understanding a query
 * (spelling, WordNet expansions and kinds) and the scorer. An engine gathers the candidates.
 */
export abstract class HybridScorer implements DomainSearch {
  /** The names' words' vectors and their WordNet senses' (`senseTexts`), by word. */
  private readonly vocabularyVectors = new WordVectors();
  /**
   * What the last queries mean apart from the inventory (`meaning`): popular queries come again,
   * and each costs its embeddings, WordNet's look-ups and splitting its definitions (~5 % of a
   * search's CPU at 4k names). The same query asked twice at once shares one read (lru-cache's
   * fetch), and a failed one is not kept. Read only.
   */
  private readonly meanings = new LRUCache<string, Meaning>({
    max: 2_500,
    fetchMethod: (corrected) => {
      const words = corrected.split(' ');
      const vector = async (text: string) => (await this.embedder.embed([text]))[0];
      return Promise.all([vector(corrected), glossedQuery(words).then((glossed) => (glossed ? vector(glossed) : undefined)), expansionWords(words), broaderWords(words)]);
    },
  });

  constructor(
    protected readonly embedder: Embedder,
    protected readonly log: (m: string) => void = () => undefined,
  ) {}

  /** The candidates for a query (a name asked for by `asName` looked up too), with what the scorer needs of each. */
  protected abstract gather(environment: Environment, query: string, asName?: string): Promise<Gathered>;

  /**
   * Embeds the vocabulary's words and their WordNet senses and opens the dictionaries, so that no
   * search waits for them; `borrowed`: a log to take their vectors from first (EmbeddingCache.fill).
   */
  protected async warm(environment: Environment, words: string[], vocabulary: Vocabulary, borrowed?: EmbeddingLogReader): Promise<void> {
    if (words.some((w) => !vocabulary.cache.has(w))) this.log(`${environment}: embedding the ${words.length} words of the names…`);
    await this.learnWords(words, vocabulary.cache, borrowed);
    vocabulary.speller.correctQuery('warmup');
    await expansionWords(['warmup']);
  }

  /**
   * Keeps the vectors of the words and of their first WordNet senses (`senseTexts`), embedding
   * those the cache lacks: the words first, then the senses (each a batch of its own, as large as
   * the vocabulary at a first start).
   */
  protected async learnWords(words: string[], cache: EmbeddingCache, borrowed?: EmbeddingLogReader): Promise<void> {
    const missing = [...new Set(words.filter((w) => !this.vocabularyVectors.has(w)))];
    if (!missing.length) return;
    await cache.fill(missing, this.embedder, borrowed);
    const texts = await Promise.all(missing.map((w) => senseTexts(w)));
    await cache.fill([...new Set(texts.flat())], this.embedder, borrowed);
    missing.forEach((w, i) => this.vocabularyVectors.add(w, cache.get(w)!, texts[i].map((t) => cache.get(t)!)));
  }

  /** The query's vectors and WordNet terms (what does not depend on the inventory), from `meanings`. */
  protected async meaning(corrected: string): Promise<Meaning> {
    const found = await this.meanings.fetch(corrected);
    // (fetch gives undefined only for a read aborted by an AbortSignal, which none is given.)
    if (!found) throw new Error(`the meaning of "${corrected}" was not read`);
    return found;
  }

  /** The meaning placed in the inventory: its words among the expansions (weighed by their similarity to the query) and kinds. */
  protected async understood(corrected: string, meaning: Meaning, vocabulary: Vocabulary): Promise<Understanding> {
    const [queryVector, glossVector, expansionTerms, broaderTerms] = meaning;
    const forms = [...new Set([...expansionTerms].map((w) => baseForms(w).find((f) => vocabulary.hasWord(f))).filter((f): f is string => f !== undefined))];
    const broader = new Map<string, number>();
    for (const [w, level] of broaderTerms) {
      const form = baseForms(w).find((f) => vocabulary.hasWord(f));
      if (form) broader.set(form, Math.max(broader.get(form) ?? 0, level === 1 ? 1 : 0.5));
    }
    const expansion = new Map<string, number>();
    await this.learnWords(forms, vocabulary.cache);
    const query = this.vocabularyVectors.query(queryVector);
    for (const form of forms) expansion.set(form, this.vocabularyVectors.dot(this.vocabularyVectors.id(form)!, 0, query));
    return { corrected, words: corrected.split(' '), queryVector, glossVector, expansion, broader };
  }

  /** The words whose names become candidates: the best expansions, then the query's kinds. */
  protected static expansionTerms(u: Understanding): string[] {
    return [...[...u.expansion].sort((a, b) => b[1] - a[1]).slice(0, EXPANSIONS).map(([w]) => w), ...u.broader.keys()];
  }

  /**
   * The query with each word spell-corrected (the speller as of the last sync is good enough),
   * except a word that is whole words of a name on the market: a run-together label (`vetbold`,
   * `wildshore`, `livetest` in `live|test|one`) is a name, not a typo of `vetoed`, `wiltshire`
   * or `lightest`. Only whole words count, so a typo inside some longer word of a large inventory
   * (`solor` in `con|solo|rama`) is still corrected. That costs one look-up of the engine's
   * names holding the word, and only for a word the speller would change.
   */
  protected async corrected(vocabulary: Vocabulary, query: string, namesContaining: (word: string, limit: number) => Promise<Array<Pick<Entry, 'name' | 'words'>>>): Promise<string> {
    const words = splitWords(query);
    const fixed = new Map<string, string>();
    // Each distinct word once, and the first MAX_QUERY_WORDS only (as many as the keyword search
    // looks at): a long query cannot fan out into many look-ups.
    await Promise.all(
      [...new Set(words)].map(async (w, i) => {
        const c = vocabulary.speller.correct(w);
        if (c === w || i >= MAX_QUERY_WORDS) return fixed.set(w, c);
        const names = await namesContaining(w, WHOLE_WORDS_PROBE);
        fixed.set(w, names.some((entry) => labelOf(entry.name) === w || spansWords(entry, w)) ? w : c);
      }),
    );
    return words.map((w) => fixed.get(w)!).join(' ') || query.toLowerCase();
  }

  /**
   * Each candidate's signals, without a pause (so an engine that reads its index in memory
   * scores each entry as it is now). Words of names listed since start-up have no vector yet:
   * they are embedded for the searches that follow.
   */
  protected score(found: Found[], u: Understanding, cache: EmbeddingCache, numbered?: NumberedWords): Array<{ entry: Entry; signals: Signals }> {
    const { queryVector, glossVector, expansion, broader } = u;
    const unseen = new Set<string>();
    // Each word's views of the query, once per search: candidates share their words (`coffee` in
    // dozens of them), and each view is a 384-dimension dot product, some per WordNet sense.
    const views = new Map<string, View>();
    // The same views by the engine's word numbers, when it has them.
    const byNumber = new Map<number, View>();
    const table = this.vocabularyVectors;
    const query = table.query(queryVector);
    const gloss = glossVector && table.query(glossVector);
    const find = (w: string) => table.id(w);
    const viewOf = (w: string, id: number | undefined): View => {
      let view = views.get(w);
      if (view) return view;
      if (id === undefined) {
        // A word with no vectors yet counts for nothing: they are embedded for later searches.
        unseen.add(w);
        view = { sense: 0, word: 0, broader: 0, glossWord: 0, expanded: 0 };
      } else {
        let sense = 0;
        for (let row = table.senses(id); row > 0; row--) sense = Math.max(sense, table.dot(id, row, query));
        // The word's own row read once for the query and its definitions.
        const similarity = gloss === undefined ? table.dot(id, 0, query) : table.dot2(id, query, gloss);
        view = { sense, word: similarity, broader: (broader.get(w) ?? 0) * similarity, glossWord: gloss === undefined ? 0 : table.second, expanded: expansion.get(w) ?? 0 };
      }
      views.set(w, view);
      return view;
    };
    const viewOfNumber = (number: number): View => {
      let view = byNumber.get(number);
      if (view) return view;
      byNumber.set(number, (view = viewOf(numbered!.word(number), numbered!.row(number, find))));
      return view;
    };
    const numbers = new Uint32Array(SlotWords.WIDTH);
    const candidates = found.map(({ entry, slot, name, glossName, keyword }) => {
      let word = 0;
      let glossWord = 0;
      let expanded = 0;
      let sense = 0;
      let broaderOf = 0;
      const take = (view: View) => {
        sense = Math.max(sense, view.sense);
        word = Math.max(word, view.word);
        broaderOf = Math.max(broaderOf, view.broader);
        glossWord = Math.max(glossWord, view.glossWord);
        expanded = Math.max(expanded, view.expanded);
      };
      // By number where the engine has them (a slot's 16 bytes rather than its entry's words and their strings).
      const count = numbered && slot !== undefined ? numbered.read(slot, entry, numbers) : -1;
      if (count >= 0) for (let i = 0; i < count; i++) take(viewOfNumber(numbers[i]));
      else for (const w of entry.words) take(viewOf(w, table.id(w)));
      return { entry, signals: { keyword: keyword && midWordOnly(entry, u.words) ? MID_WORD * keyword : keyword, name, word, expansion: expanded, glossName, glossWord, sense, broader: broaderOf, available: entry.available } };
    });
    if (unseen.size) void this.learnWords([...unseen], cache).catch((err: Error) => this.log(`embedding words failed: ${err.message}`));
    return candidates;
  }

  /** The candidates for a query with the signals the scorer weighs (the quality benchmark reads them). */
  async candidates(environment: Environment, query: string): Promise<Array<{ entry: Entry; signals: Signals }>> {
    return this.scored(environment, query).then((s) => s.candidates);
  }

  private async scored(environment: Environment, query: string, asName?: string): Promise<{ candidates: Array<{ entry: Entry; signals: Signals }>; named?: Entry }> {
    const { found, named, understanding, cache, numbered } = await this.gather(environment, query, asName);
    return { candidates: this.score(found, understanding, cache, numbered), named };
  }

  async search(environment: Environment, query: string, limit = MAX_RESULTS): Promise<SearchHit[]> {
    // A query written as a name (`planet.com`) asks for that name: it comes first when it is on
    // the market (score 1, above any ranked hit), then the names the search finds for its label
    // (the TLD is no word of what was asked).
    const written = normaliseDomainName(query).replace(/^www\./, '');
    const asName = isDomainName(written) ? written : undefined;
    const { candidates, named } = await this.scored(environment, asName ? labelOf(asName) : query, asName);
    const ranked: Array<{ entry: Entry; score: number }> = [];
    for (const { entry, signals } of candidates) {
      const score = rerank(signals);
      if (score >= MIN_SCORE && entry.name !== asName) ranked.push({ entry, score });
    }
    ranked.sort((a, b) => b.score - a.score || a.entry.name.length - b.entry.name.length);
    return [...(named ? [{ entry: named, score: 1 }] : []), ...ranked]
      .slice(0, limit)
      .map(({ entry, score }) => ({ name: entry.name, available: entry.available, buyNowPriceCents: entry.buyNowPriceCents, currency: entry.currency, score: Math.round(score * 10_000) / 10_000 }));
  }
}

/**
 * The embedded engine: each environment's names, vectors and words in this process's memory
 * (InventoryIndex, following the inventory), keyword hits from its labels' trigrams and stems
 * (LabelIndex). A search reads no table: only the sync that keeps the index up to the inventory
 * goes to Postgres.
 */
export class HybridSearch extends HybridScorer {
  private readonly indexes = new Map<Environment, InventoryIndex>();
  private feed: ChangeFeed | undefined;
  /** Stops following the change feed. */
  private unfollow: (() => void) | undefined;
  /** Postgres' English stop words, read once before the first index is made (again after a failure). */
  private stopWords: Promise<ReadonlySet<string>> | undefined;

  constructor(
    private readonly dataSource: DataSource,
    embedder: Embedder,
    /** One cache for all environments, or one per environment (each loads only its own vectors). */
    private readonly caches: EmbeddingCache | ((environment: Environment) => EmbeddingCache),
    log: (m: string) => void = () => undefined,
    /** Where HNSW graphs of large inventories are saved; none means rebuild on each start. */
    private readonly indexDir?: string,
  ) {
    super(embedder, log);
  }

  /** The environment's index, made on first use. */
  async index(environment: Environment): Promise<InventoryIndex> {
    let index = this.indexes.get(environment);
    if (index && !index.failed) return index;
    this.stopWords ??= postgresStopWords(this.dataSource).catch((err: Error) => {
      this.stopWords = undefined;
      throw err;
    });
    const stopWords = await this.stopWords;
    index = this.indexes.get(environment);
    if (index && !index.failed) return index;
    const cache = typeof this.caches === 'function' ? this.caches(environment) : this.caches;
    this.indexes.set(environment, (index = new InventoryIndex(environment, this.dataSource, this.embedder, cache, this.log, this.indexDir, { feedLive: () => this.feed?.live ?? false, stopWords })));
    return index;
  }

  /**
   * Follows the listing change feed (subscribed before the caller starts it): an index syncs when
   * a change of its environment is heard, when the feed is lost or back, and every POLL_MS beside
   * it (for what the feed does not name: a category changed by an import); and while the feed is
   * heard, a search with no change heard before it syncs nothing (InventoryIndex.refresh). Without
   * a feed every search syncs first. Returns a stop function.
   */
  follow(feed: ChangeFeed): () => void {
    this.feed = feed;
    this.unfollow?.();
    this.unfollow = followListings(
      feed,
      (environments) => {
        for (const [own, index] of this.indexes) if (!environments || environments.has(own)) index.changed();
      },
      POLL_MS,
    );
    return this.unfollow;
  }

  /** Reads the environment's inventory and embeds every name and word now (start-up, with progress). */
  async load(environment: Environment): Promise<InventoryIndex> {
    const index = await this.index(environment);
    await index.load();
    await this.warm(environment, [...index.speller.words()], HybridSearch.vocabulary(index));
    return index;
  }

  status(environment: Environment): EngineStatus {
    const index = this.indexes.get(environment);
    if (!index) return { names: 0, pendingVectors: 0, vectorIndex: 'exact', building: false, saving: false, searchesThatRead: 0 };
    return { names: index.size, pendingVectors: index.pendingVectors, vectorIndex: index.vectorIndexKind, building: index.buildingGraph, saving: index.savingGraph, searchesThatRead: index.searchesThatRead };
  }

  /** Saves large environments' HNSW graphs with their changes (on shutdown; in a worker thread). */
  async save(): Promise<void> {
    // Shutting down: what the feed says now (its reset as it closes) starts no sync.
    this.unfollow?.();
    // One at a time: each save holds a copy of its graph in its worker.
    for (const index of this.indexes.values()) await index.save();
  }

  private static vocabulary(index: InventoryIndex): Vocabulary {
    return { speller: index.speller, hasWord: (w) => index.speller.holds(w), cache: index.cache };
  }

  /**
   * Everything that waits (the sync, embeddings, WordNet, the graph's worker) happens
   * first; the candidates are then gathered without a pause, so a sync running meanwhile cannot
   * hand a slot to another name half-way through.
   */
  protected async gather(environment: Environment, query: string, asName?: string): Promise<Gathered> {
    const index = await this.index(environment);
    // Caught up with the inventory first (while the change feed is heard, nothing to wait for
    // unless a change was heard): the spelling's look-ups and the keyword hits read the index.
    await index.refresh();
    const vocabulary = HybridSearch.vocabulary(index);
    const corrected = await this.corrected(vocabulary, query, async (w, limit) => index.labels.containing(w, limit).map((slot) => index.slots[slot]!));
    const fuzzy = (w: string) => !index.speller.isKnown(w);
    const meaning = await this.meaning(corrected);
    const u = await this.understood(corrected, meaning, vocabulary);
    // Above SEARCH_ANN_THRESHOLD names the graph's worker answers these, asked in one message and
    // searched one after the other there: the query's own neighbours and those of its definitions.
    // Each with its dot product, which the vector index computed, by its vector's number: read here
    // rather than computed again below (a slot taken by another name meanwhile has another number).
    const nameScores = new Map<number, number>();
    const glossScores = new Map<number, number>();
    const nearing = Promise.resolve(index.nearestEach([{ query: u.queryVector, k: CANDIDATES, scores: nameScores }, ...(u.glossVector ? [{ query: u.glossVector, k: GLOSS_CANDIDATES, breadth: GLOSS_BREADTH, scores: glossScores }] : [])]));
    // Its failure is met by the await below (a keyword search that throws first leaves it unawaited).
    nearing.catch(() => undefined);
    // The keyword hits meanwhile (at 1M names the worker's ~2.5 ms and these ~1 ms overlap), each
    // with the name it was scored as: a slot another name has taken by the answer is left out.
    const keywordHits = index.labels.search(queryWords(corrected), CANDIDATES, { fuzzy, variants: (w) => index.speller.variants(w) }, (slot) => index.slots[slot]);
    const [near, nearGloss = []] = await nearing;

    // From here on, no await: each slot is read as it is now (a slot freed meanwhile is skipped
    // below; one taken again by another name is read as that name).
    const keywordOf = new Map(keywordHits.filter((h) => index.slots[h.slot]?.name === h.name).map((h) => [h.slot, h.score]));
    const slots = new Set<number>(near);
    for (const slot of keywordOf.keys()) slots.add(slot);
    for (const slot of nearGloss) slots.add(slot);
    // The best expansions' names and the names of the query's kinds, a few of each.
    for (const w of HybridScorer.expansionTerms(u)) for (const slot of index.namesWith(w, PER_EXPANSION)) slots.add(slot);
    const found: Found[] = [];
    const { slab } = index.vectors;
    const toQuery = slab.query(u.queryVector);
    const toGloss = u.glossVector && slab.query(u.glossVector);
    for (const slot of slots) {
      const entry = index.slots[slot];
      if (!entry) continue;
      let name = 0;
      let glossName = 0;
      const ref = index.vectors.refOf(slot);
      if (index.hasVector(slot) && ref >= 0) {
        const knownName = nameScores.get(ref);
        const knownGloss = glossScores.get(ref);
        if (toGloss === undefined) name = knownName ?? slab.dot(ref, toQuery);
        else if (knownName === undefined && knownGloss === undefined) {
          // Neither search answered it: the vector read once for both.
          name = slab.dot2(ref, toQuery, toGloss);
          glossName = slab.second;
        } else {
          name = knownName ?? slab.dot(ref, toQuery);
          glossName = knownGloss ?? slab.dot(ref, toGloss);
        }
      }
      found.push({ entry, slot, name, glossName, keyword: keywordOf.get(slot) ?? 0 });
    }
    // Looked up after the candidates, which waited for the index to catch up with the inventory.
    return { found, named: asName === undefined ? undefined : index.entry(asName), understanding: u, cache: index.cache, numbered: index.numbered };
  }
}
