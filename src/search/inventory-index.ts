/**
 * One environment's names on the market (listed or reserved), held in memory for search: each
 * name's words, price and availability in a slot, its MiniLM vector in a vector index, which
 * slots hold each word, and its label's trigrams and stems for keyword search (LabelIndex): a
 * search reads no table.
 *
 * It follows the inventory without a restart. Every domain row carries the id of the
 * transaction that last wrote it (`changed_xid`, set by a trigger); a sync reads the rows with
 * `changed_xid` at or above the previous sync's horizon (the oldest transaction then still
 * running), so every change committed since is seen, whatever order transactions commit in, and
 * applies them: a new listing takes a slot, a sale or delisting frees one, a price change
 * updates it. New names wait for their vector in a queue that a background loop embeds; a
 * search waits for it when it is short.
 *
 * Above SEARCH_ANN_THRESHOLD names the vectors go into an HNSW graph, saved in the data directory and
 * mapped read-only on the next start (a missing one is built, with progress). Graphs are written
 * by a worker thread only: a build, while the exact index answers searches; and every
 * SAVE_AFTER_CHANGES changes, the saved graph with the changes applied, while the graph in use
 * and the changes since (searched exactly) answer. Each new graph is opened in place of the one in
 * use (mapped, not loaded, by a search worker of its own that answers the graph's searches), with
 * the changes made while it was written kept beside it. So no graph is loaded, mapped, updated,
 * saved or searched on the event loop that answers searches.
 * This runs in the search process (src/main/search.ts), never in an API process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { DIMENSIONS, type Embedder } from './embedder';
import type { EmbeddingCache } from './embedding-cache';
import { inventoryPages, onMarket, SyncRunner, type InventoryRow } from './inventory-changes';
import { MODEL_ID } from './model-files';
import { removeOtherFormats } from './graph-files';
import { GRAPH_FORMAT } from './hnsw';
import { LabelIndex } from './label-index';
import { LoopSlice } from './loop-slice';
import { segmentLabel } from './segment';
import { Lists } from './slot-lists';
import { SlotWords, WordTable, type NumberedWords } from './slot-words';
import { Speller } from './spelling';
import { DEFAULT_ANN_THRESHOLD, type Environment } from '../config';
import { ExactIndex, HnswIndex, VectorStore, type GraphChanges, type Nearest, type VectorIndex } from './vector-index';

/** One string for each currency (a handful), for every environment's entries to share. */
const currencies = new Map<string, string>();
const currency = (code: string) => currencies.get(code) ?? (currencies.set(code, code), code);

export interface Entry {
  name: string;
  /** The label split into words (`espressobar` → `espresso`, `bar`): `entryText` joins them. */
  words: string[];
  available: boolean;
  buyNowPriceCents: number;
  currency: string;
}

/**
 * The text a name is embedded as: its label's words (`espresso bar`). Kept as the words alone, not
 * also as a string of its own (~31 MiB at 1M names): segmentLabel joins them with single spaces.
 */
export function entryText(entry: Pick<Entry, 'words'>): string {
  return entry.words.join(' ');
}

const PAGE = 20_000;
/** The longest run of a sync's page on the event loop before it lets other work in. */
const SLICE_MS = 10;
const EMBED_CHUNK = 1024;
/** A search waits for at most this many names to be embedded; more are caught up in the background. */
const WAIT_FOR_EMBEDDING = 256;
/**
 * Slots changed since the HNSW graph in use was written, after which the worker writes a new one
 * (the changes are searched exactly until then: ~2 ms more per search at 10,000).
 */
const SAVE_AFTER_CHANGES = 10_000;
/**
 * Names added since the graph in use was written, as a share of the names it holds, above which
 * the graph is out of date as a whole (an import larger than a quarter of the market): every name
 * it lacks is searched exactly on the main thread (at 1M names after a 900,000-name import onto
 * a graph of 100,000: ~95 ms of CPU a search, against 11 with a whole graph), so the graph
 * written with them counts as a build (status `building`, as for a first load), and saves wait
 * until the import's names are embedded, so that one write takes them all.
 */
const OUT_OF_DATE_SHARE = 0.25;

/** The saved graph's file name in the data directory's `embeddings` (its graphs are `<name>.<stamp>`, its names file `<name>.names.json`). */
export function graphFileName(environment: Environment): string {
  return `${environment}-${MODEL_ID}.${GRAPH_FORMAT}.usearch`;
}

/** The event loop's longest turn while new names' vectors are added to the index (1,024 take 1–3 ms). */
const ADD_SLICE_MS = 2;

export interface InventoryIndexOptions {
  /** Names above which the vectors go into an HNSW graph (InventoryIndex.defaults; tests lower it). */
  annThreshold?: number;
  /**
   * Whether the listing change feed is heard now (HybridSearch.follow): while it is, a search
   * syncs only after a change was heard (`changed`); otherwise before every search.
   */
  feedLive?: () => boolean;
  /** Postgres' English stop words (`postgresStopWords`), for the labels' full-text match; none by default. */
  stopWords?: ReadonlySet<string>;
}

export class InventoryIndex {
  /** What an index made without options takes: the search process sets it from its configuration (SEARCH_ANN_THRESHOLD). */
  static readonly defaults: { annThreshold: number } = { annThreshold: DEFAULT_ANN_THRESHOLD };

  readonly slots: Array<Entry | undefined> = [];
  /** Each slot's vector: the number of its name's in the embedding cache. */
  readonly vectors: VectorStore;
  readonly speller = new Speller();
  /**
   * Slots of the names containing each word, lists cleaned lazily as the keyword index's are
   * (`namesWith` reads them): 4 bytes a name a word rather than a Set's ~50 MiB at 1M names.
   * Whether a name on the market holds a word is the speller's count.
   */
  private readonly postings = new Lists<number>((slot, word) => this.holdsWord(slot, word));
  /** The words of the names, numbered, one string each (the entries' `words` share it). */
  private readonly words = new WordTable();
  /** Each slot's word numbers (what `namesWith` reads of a slot). */
  private readonly slotWords = new SlotWords();
  private readonly slotOf = new Map<string, number>();
  /** Keyword retrieval over the labels (the keyword ranker's probes, in memory). */
  readonly labels: LabelIndex;
  private readonly free: number[] = [];
  /** Slots taken from a saved graph, waiting for their row in the first read. */
  private readonly adopted = new Set<number>();
  private index: VectorIndex;
  private horizon: string | undefined;
  /** Slots whose vector is not in the index yet. */
  private queue = new Set<number>();
  private embedding: Promise<void> | undefined;
  /** Syncs, one at a time (callers during one share the next). */
  private readonly syncs = new SyncRunner(() => this.sync());
  /** The HNSW graph being built in a worker, or written with a change too large for the graph in use (OUT_OF_DATE_SHARE), if any. */
  private building: Promise<void> | undefined;
  /** The HNSW graph in use being written again with the changes since (in a worker), if any. */
  private saving: Promise<void> | undefined;
  /** Changes to the graph in use after which it is saved (more after a failed save). */
  private saveAt = SAVE_AFTER_CHANGES;
  /** The next save writes the whole graph (the last one failed). */
  private rebuildNext = false;
  /** While a graph is built or saved: the slots added or removed since its vectors were taken. */
  private journal: Set<number> | undefined;
  /** Where graphs go when there is no data directory (made on the first build, removed on exit). */
  private scratchDir: string | undefined;
  private readonly annThreshold: number;
  private readonly feedLive: () => boolean;
  /** A change was heard (or none can be) since the last sync began: the next search syncs first. */
  private stale = true;
  /** Searches that had to wait for a read of the inventory (see EngineStatus). */
  searchesThatRead = 0;
  /** The last background sync's failure, logged once. */
  private lastError: string | undefined;

  constructor(
    readonly environment: Environment,
    private readonly dataSource: DataSource,
    private readonly embedder: Embedder,
    readonly cache: EmbeddingCache,
    private readonly log: (m: string) => void,
    private readonly indexDir?: string,
    options: InventoryIndexOptions = {},
  ) {
    this.vectors = new VectorStore(cache.slab);
    this.index = new ExactIndex(this.vectors);
    this.annThreshold = options.annThreshold ?? InventoryIndex.defaults.annThreshold;
    this.feedLive = options.feedLive ?? (() => false);
    this.labels = new LabelIndex((name) => this.slotOf.get(name), options.stopWords ?? new Set());
  }

  /**
   * The change feed named a change of this environment (or was lost, or it is the poll beside
   * it): the index syncs now, and the searches that come meanwhile wait for that sync.
   */
  changed(): void {
    this.stale = true;
    if (this.horizon === undefined) return;
    void this.refresh(false).then(
      () => (this.lastError = undefined),
      (err: Error) => {
        if (this.lastError !== err.message) this.log(`${this.environment}: syncing the search index failed (retried on the next search): ${err.message}`);
        this.lastError = err.message;
      },
    );
  }

  /** Which vector index answers `nearest` now. */
  get vectorIndexKind(): 'exact' | 'hnsw' {
    return this.index instanceof HnswIndex ? 'hnsw' : 'exact';
  }

  /**
   * Whether an HNSW graph is being built (in a worker) to replace the exact index, or written
   * with a change too large for the graph in use (OUT_OF_DATE_SHARE).
   */
  get buildingGraph(): boolean {
    return this.building !== undefined;
  }

  /** Whether the HNSW graph is being written with its changes and opened again (in worker threads). */
  get savingGraph(): boolean {
    return this.saving !== undefined;
  }

  /** Settles when the HNSW graph being built (if any) is swapped in, or its build or write failed. */
  graphBuilt(): Promise<void> {
    return this.building ?? Promise.resolve();
  }

  get size(): number {
    return this.slotOf.size;
  }

  get pendingVectors(): number {
    return this.queue.size;
  }

  slot(name: string): number | undefined {
    return this.slotOf.get(name);
  }

  /** The entry of a name in the index, if it is there. */
  entry(name: string): Entry | undefined {
    const slot = this.slotOf.get(name);
    return slot === undefined ? undefined : this.slots[slot];
  }

  hasVector(slot: number): boolean {
    return this.slots[slot] !== undefined && !this.queue.has(slot);
  }

  /** The k nearest slots to the vector, best first; `breadth`: how wide the HNSW graph is searched; `scores`: filled with their dot products (VectorIndex). */
  nearest(query: Float32Array, k: number, breadth?: number, scores?: Map<number, number>): number[] | Promise<number[]> {
    return this.index.nearest(query, k, breadth, scores);
  }

  /** `nearest` for each request, asked together (one message to the graph's worker). */
  nearestEach(requests: Nearest[]): number[][] | Promise<number[][]> {
    return this.index.nearestEach(requests);
  }

  private get indexFile(): string | undefined {
    return this.indexDir && path.join(this.indexDir, graphFileName(this.environment));
  }

  /** Where this index's graphs are written: the data directory, or a directory of its own in tmp. */
  private graphFile(): string {
    if (this.indexFile) return this.indexFile;
    if (!this.scratchDir) {
      const dir = (this.scratchDir = mkdtempSync(path.join(os.tmpdir(), `hnsw-${this.environment}-`)));
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    }
    return path.join(this.scratchDir, `${this.environment}.usearch`);
  }

  /**
   * Brings the index up to the inventory as committed when it is called: waits for a sync that
   * starts after the call (one at a time; callers arriving meanwhile share the next one), then
   * for the new names' vectors when there are few of them. While the change feed is heard and no
   * change was heard since the last sync began, nothing can be newer than that sync: it waits
   * for that one (if still under way) and reads nothing, so a search makes no round trip to
   * Postgres. A change is then seen once its notification arrives, which Postgres sends at
   * commit (the same rule as the API's listing mirror, src/discovery/listing-cache.ts).
   */
  async refresh(bySearch = true): Promise<void> {
    if (!this.stale && this.horizon !== undefined && this.feedLive()) {
      await this.syncs.current;
    } else if (bySearch && this.horizon !== undefined) {
      this.searchesThatRead++;
      await this.refresh(false);
      return;
    } else {
      await this.syncs.run();
    }
    if (this.queue.size === 0) return;
    if (this.queue.size <= WAIT_FOR_EMBEDDING) await this.embedQueued();
    else void this.embedQueued().catch((err: Error) => this.log(`${this.environment}: embedding new names failed (retried on the next search): ${err.message}`));
  }

  /** The first sync: everything on the market, the saved HNSW graph if any, and every vector. */
  async load(): Promise<void> {
    await this.refresh();
    await this.embedQueued();
  }

  /** Set when the first read failed half-way: the owner starts afresh with a new index. */
  failed = false;

  private async sync(): Promise<void> {
    // Its owner has a new index (the callers that were waiting on this one fail once).
    if (this.failed) throw new Error(`the ${this.environment} search index failed to load; a new one is loading`);
    // Changes heard from here on are read by the next sync.
    this.stale = false;
    try {
      await this.read();
    } catch (err) {
      this.stale = true;
      if (this.horizon === undefined) {
        this.failed = true;
        // Its owner starts afresh: the saved graph's worker, if one was started, ends.
        if (this.index instanceof HnswIndex) this.index.close();
      }
      throw err;
    }
  }

  private async read(): Promise<void> {
    const first = this.horizon === undefined;
    let horizon: string | undefined;
    let read = 0;
    const saved = first && this.indexFile ? await HnswIndex.load(this.indexFile, this.vectors) : undefined;
    if (saved) this.adopt(saved.index, saved.names);
    // The first read takes every name on the market (in name order, by the unique index); later
    // ones, the rows changed since, including names that left the market.
    for await (const page of inventoryPages(this.dataSource, this.environment, first ? undefined : this.horizon, PAGE)) {
      horizon = page.horizon;
      await this.apply(page.rows);
      read += page.rows.length;
      if (first && !page.last && read % 100_000 < PAGE) this.log(`  ${this.environment}: ${read} names read`);
    }
    // Names the saved graph holds that are no longer on the market.
    for (const slot of this.adopted) this.release(this.slots[slot]!.name, slot);
    this.adopted.clear();
    // The whole market read: the keyword lists' growing room is given back.
    if (first) {
      this.labels.trim();
      this.postings.trim();
      this.slotWords.trim(this.slots.length);
    }
    this.horizon = horizon;
    this.saveIfDue();
  }

  /** Takes a saved graph and the names of its slots; their other fields come with the first read. */
  private adopt(index: HnswIndex, names: Array<[string, string] | null>): void {
    this.index = index;
    names.forEach((saved, slot) => {
      this.slots[slot] = undefined;
      if (saved === null) this.free.push(slot);
      else {
        const [name, text] = saved;
        this.slotOf.set(name, slot);
        this.slots[slot] = { name, words: this.takeWords(slot, text), available: false, buyNowPriceCents: 0, currency: '' };
        this.adopted.add(slot);
      }
    });
    this.log(`${this.environment}: loaded the saved HNSW graph of ${index.size} names`);
  }

  private async apply(rows: InventoryRow[]): Promise<void> {
    const slice = new LoopSlice(SLICE_MS);
    for (const row of rows) {
      // Splitting new labels costs ~70 µs a name (1.4 s for an import's page of 20,000): the loop
      // is given back every SLICE_MS, between rows, so searches of other environments and health
      // checks are answered meanwhile. Each row is applied whole between two such turns.
      if (slice.spent) await slice.pause();
      const slot = this.slotOf.get(row.name);
      if (!onMarket(row)) {
        if (slot !== undefined) this.release(row.name, slot);
        continue;
      }
      const attributes = { available: row.status === 'listed', buyNowPriceCents: Number(row.buy_now_price_cents), currency: currency(row.currency.trim()) };
      if (slot !== undefined && !this.adopted.has(slot)) {
        Object.assign(this.slots[slot]!, attributes);
        // (An import may move a name to another category: its full-text match follows.)
        this.labels.add(slot, this.slots[slot]!.name, row.category);
        continue;
      }
      let taken: number;
      if (slot !== undefined) {
        // Adopted from a saved graph: the graph has its vector; the store takes it from the cache.
        this.adopted.delete(slot);
        taken = slot;
        Object.assign(this.slots[slot]!, attributes);
        const cached = this.cache.ref(entryText(this.slots[slot]!));
        if (cached !== undefined) this.vectors.set(slot, cached);
        else {
          // No vector to go with the graph's: take it out until the name is embedded again.
          this.index.remove(slot);
          this.journal?.add(slot);
          this.queue.add(slot);
        }
      } else {
        const text = await segmentLabel(row.label);
        taken = this.free.pop() ?? this.slots.length;
        this.slots[taken] = { name: row.name, words: this.takeWords(taken, text), ...attributes };
        this.slotOf.set(row.name, taken);
        this.queue.add(taken);
      }
      // The entry's string of the name (the keyword index keeps it, not a copy of its own).
      this.labels.add(taken, this.slots[taken]!.name, row.category);
      const words = this.slots[taken]!.words;
      this.speller.addWords(words);
      for (const w of new Set(words)) this.postings.add(this.words.number(w)!, taken);
    }
  }

  /** Up to `limit` slots of names on the market holding the word, in the order they came. */
  namesWith(word: string, limit = Infinity): number[] {
    const out: number[] = [];
    const number = this.words.number(word);
    if (number === undefined) return out;
    // A list may hold a slot that has left or been taken by another name (cleaned lazily), or twice.
    // (No list holds a slot still adopted from a saved graph: its words are listed when its row is read.)
    for (const slot of this.postings.get(number)) {
      if (out.length >= limit) break;
      if (this.holdsWord(slot, number) && !out.includes(slot)) out.push(slot);
    }
    return out;
  }

  /**
   * The slots' words by number, for the scorer. It reads them after gather has awaited: a slot
   * that no longer holds the entry gathered (none can be released in that turn today) reads -1,
   * and the scorer reads the entry's words; a slot that does holds each of its words, so none of
   * their numbers has gone to another word.
   */
  readonly numbered: NumberedWords = {
    read: (slot, entry, out) => (this.slots[slot] === entry ? this.slotWords.read(slot, out) : -1),
    word: (number) => this.words.word(number),
    row: (number, find) => this.words.row(number, find),
  };

  /** Whether the slot's name holds the word (by number): its numbers first, its entry only for a label of more than SlotWords.WIDTH words. */
  private holdsWord(slot: number, number: number): boolean {
    const held = this.slotWords.holds(slot, number);
    return held === 1 || (held === -1 && this.slots[slot]!.words.includes(this.words.word(number)));
  }

  /** The label's words (its segmented text split) for the slot: each the one string of that word, numbered in `slotWords`. */
  private takeWords(slot: number, text: string): string[] {
    const numbers = text
      .split(' ')
      .filter(Boolean)
      .map((w) => this.words.hold(w));
    this.slotWords.set(slot, numbers);
    // An array of its words' own length (one grown by push keeps room for 17: ~60 MiB at 1M names).
    return numbers.map((number) => this.words.word(number));
  }

  private release(name: string, slot: number): void {
    const entry = this.slots[slot]!;
    // An adopted slot never had its words counted.
    const adopted = this.adopted.delete(slot);
    if (!adopted) this.speller.addWords(entry.words, -1);
    this.slots[slot] = undefined;
    this.slotWords.clear(slot);
    // (An adopted name that left before the first read reached it had no postings.)
    if (!adopted) for (const w of new Set(entry.words)) this.postings.stale(this.words.number(w)!);
    for (const w of entry.words) this.words.release(w);
    this.labels.remove(slot);
    this.vectors.clear(slot);
    this.slotOf.delete(name);
    this.queue.delete(slot);
    this.index.remove(slot);
    this.journal?.add(slot);
    this.free.push(slot);
  }

  /** Embeds the queued names (the cache first), adds them to the index; one loop at a time. */
  embedQueued(): Promise<void> {
    this.embedding ??= this.embedLoop().finally(() => (this.embedding = undefined));
    return this.embedding;
  }

  private async embedLoop(): Promise<void> {
    const total = this.queue.size;
    let done = 0;
    while (this.queue.size > 0) {
      const slots = [...this.queue].slice(0, EMBED_CHUNK);
      const texts = slots.map((s) => entryText(this.slots[s]!));
      await this.cache.fill(texts, this.embedder);
      const slice = new LoopSlice(ADD_SLICE_MS);
      for (const [i, slot] of slots.entries()) {
        // Searches get their turn between slices (each slot is checked again after the pause).
        if (slice.spent) await slice.pause();
        // While we embedded, the name may have left the market (no longer queued), or its slot
        // been taken by another name (queued again, with another text: the next round has it).
        const entry = this.slots[slot];
        if (!this.queue.has(slot) || !entry || entryText(entry) !== texts[i]) continue;
        this.queue.delete(slot);
        this.vectors.set(slot, this.cache.ref(texts[i])!);
        this.index.add(slot);
        this.journal?.add(slot);
      }
      this.saveIfDue();
      done += slots.length;
      if (total > EMBED_CHUNK * 4 && done % (EMBED_CHUNK * 64) < EMBED_CHUNK) this.log(`  ${this.environment}: ${done}/${total} names embedded`);
    }
    // Once the queue is drained, so that a large first load is one multi-threaded build, and a
    // large import one write of the graph (saveIfDue waits for the queue).
    if (this.index instanceof ExactIndex && this.index.size > this.annThreshold && !this.building) this.startGraphBuild();
    else this.saveIfDue();
  }

  /**
   * The slots to write (every slot, or those of `slots`), for the graph worker. Each slot's vector
   * and name are read together when the worker's chunk that holds it is filled, in turns of the
   * event loop of FILL_SLICE_MS at most (HnswIndex.write), so taking the changes costs the loop nothing (copying
   * every slot's references first took 5–8 ms at 1M names, a map of 10,000 changed slots ~4 ms).
   * A slot read later than the call may have changed since; the caller starts its journal in the
   * same turn as this call, so every such slot is in it, and the new graph is put in use with the
   * journal's slots searched exactly beside it (their entries in the graph hidden): what a slot
   * held when its chunk was filled is never answered from the graph. The name and the vector of a
   * slot are read in one turn, so the names file pairs each entry of the graph with its own
   * vector. A slot has a vector only while it is its entry's (release clears it), so a slot
   * waiting to be embedded is skipped.
   */
  private graphSlots(slots?: number[]): Pick<GraphChanges, 'slots' | 'count' | 'read'> {
    const end = this.slots.length;
    const scratch = new Float32Array(DIMENSIONS);
    return {
      slots:
        slots ??
        (function* () {
          for (let slot = 0; slot < end; slot++) yield slot;
        })(),
      count: slots ? slots.length : this.slotOf.size - this.queue.size,
      read: (slot) => {
        const entry = this.slots[slot];
        // (An adopted slot whose row the first read has not reached has no vector yet.) Read into
        // one array: the writer copies each vector before it reads the next.
        if (!entry || !this.hasVector(slot) || !this.vectors.has(slot)) return undefined;
        return { vector: this.vectors.get(slot, scratch), name: [entry.name, entryText(entry)] };
      },
    };
  }

  /**
   * Builds the HNSW graph over the names with a vector, in a worker thread (which saves it and the
   * names of its slots), while the exact index keeps answering; then maps it and swaps it in, with
   * the adds and removes made meanwhile searched exactly beside it. A failed build leaves the
   * exact index, and the next embedded batch tries again.
   */
  private startGraphBuild(): void {
    const live = this.graphSlots();
    const journal = (this.journal = new Set());
    this.log(`${this.environment}: building the HNSW vector index over ${live.count} names in a worker thread (searches use the exact index meanwhile)…`);
    const started = Date.now();
    const building: Promise<void> = (async () => {
      const { graph, members } = await HnswIndex.write(this.graphFile(), { removed: [], ...live }, this.log);
      const opened = await HnswIndex.open(graph, this.vectors, members);
      this.journal = undefined;
      this.index = opened.track(journal, (slot) => this.hasVector(slot));
      this.log(`${this.environment}: HNSW graph of ${this.index.size} names in use (${((Date.now() - started) / 1000).toFixed(1)} s; ${journal.size} names changed meanwhile, searched exactly beside it)`);
      // A graph is built when none of this format was saved: one saved another way (an older release's) goes.
      if (this.indexFile) await removeOtherFormats(this.indexFile, GRAPH_FORMAT).catch((err: Error) => this.log(`${this.environment}: removing graphs saved another way failed: ${err.message}`));
    })()
      .catch((err: Error) => this.log(`${this.environment}: building the HNSW graph failed (the exact index answers; retried after the next new names): ${err.message}`))
      .finally(() => {
        if (this.journal === journal) this.journal = undefined;
        // (A graph in use is saved by then, maybe out of date and so a build of its own: that one stays.)
        if (this.building === building) this.building = undefined;
      });
    this.building = building;
  }

  private saveIfDue(): void {
    if (!(this.index instanceof HnswIndex) || this.index.changes < this.saveAt || this.saving) return;
    // An import being embedded (more than a chunk waits): its names go into the graph in one write
    // once they are (each write loads the saved graph again in its worker). Not while embedding is
    // stopped (it failed, and waits for the next sync): the changes go on being saved meanwhile.
    if (this.queue.size > EMBED_CHUNK && this.embedding) return;
    void this.startSave();
  }

  /**
   * Has the worker write the graph in use again with the changes since (it loads the saved graph,
   * applies them, saves it under a new name and the names file that names it), while the graph in
   * use and the changes answer searches; then maps the new graph in its place, with the changes
   * made meanwhile beside it. A failed save keeps the graph in use and its changes (tried again
   * after the next changes).
   */
  private startSave(): Promise<void> {
    const index = this.index;
    if (!(index instanceof HnswIndex) || index.changes === 0 || this.saving) return this.saving ?? Promise.resolve();
    const pending = index.pendingChanges();
    // usearch keeps a removed entry as a tombstone until an added one takes its place, and loading
    // or mapping a saved graph with tombstones left corrupts its heap (usearch 2.25 reserves room
    // for the live entries only): a save that would leave tombstones (more of the graph's names
    // removed than names added), or the first one after a failed save (whose base may be gone),
    // writes the whole graph anew instead.
    const whole = this.rebuildNext || pending.tombstones > 0;
    const removed = whole ? [] : pending.removed;
    const slots = this.graphSlots(whole ? undefined : pending.slots);
    const journal = (this.journal = new Set());
    const started = Date.now();
    const outOfDate = pending.slots.length > OUT_OF_DATE_SHARE * index.graphSize;
    const saving: Promise<void> = (async () => {
      const { graph, size, members } = await HnswIndex.write(this.graphFile(), { base: whole ? undefined : index.file, keep: index.file, removed, ...slots }, this.log);
      const opened = await HnswIndex.open(graph, this.vectors, members);
      this.journal = undefined;
      this.rebuildNext = false;
      this.saveAt = SAVE_AFTER_CHANGES;
      if (this.index !== index) return opened.close();
      this.index = opened.track(journal, (slot) => this.hasVector(slot));
      index.close();
      // Its worker keeps the mapping until it ends; the file is not needed again. Removed off the
      // event loop: unlinking a graph file on it once took 47 ms at 80,000 names. The new graph
      // is in use whether or not that succeeds.
      await rm(index.file, { force: true }).catch((err: Error) => this.log(`${this.environment}: removing the replaced HNSW graph ${index.file} failed: ${err.message}`));
      const written = whole ? 'written whole' : `${removed.length} changes written`;
      this.log(`${this.environment}: HNSW graph of ${size} names saved (${written} in a worker in ${((Date.now() - started) / 1000).toFixed(1)} s; ${journal.size} made meanwhile)`);
    })()
      .catch((err: Error) => {
        // Not again at once (each try loads the whole graph in a worker): after as many changes more, and whole.
        this.rebuildNext = true;
        this.saveAt = index.changes + SAVE_AFTER_CHANGES;
        this.log(`${this.environment}: saving the HNSW graph failed (the graph in use and its changes answer; written whole after the next ${SAVE_AFTER_CHANGES} changes): ${err.message}`);
      })
      .finally(() => {
        if (this.journal === journal) this.journal = undefined;
        if (this.saving === saving) this.saving = undefined;
        if (this.building === saving) this.building = undefined;
      });
    this.saving = saving;
    if (outOfDate) {
      this.building = saving;
      this.log(`${this.environment}: the HNSW graph of ${index.graphSize} names lacks ${pending.slots.length} added since it was written (searched exactly meanwhile): writing it with them in a worker thread…`);
    }
    return saving;
  }

  /** Saves the HNSW graph (when there is one, in the data directory) with the changes since it was written (on shutdown). */
  async save(): Promise<void> {
    if (!this.indexFile) return;
    await this.saving;
    await this.startSave();
  }
}
