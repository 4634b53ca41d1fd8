/**
 * The OpenSearch engine (SEARCH_ENGINE=opensearch): the names, their vectors and words live in an
 * OpenSearch index (mapping.ts) that any number of nodes can hold, so search is no longer bound
 * to one host's memory. The project's query understanding and scorer stay (HybridScorer: spelling,
 * WordNet expansions and kinds, the documented rerank); OpenSearch retrieves the candidates, all
 * of them in one `_msearch` round trip:
 *   - keyword: BM25 over the label's words, the label holding the query's words (the phrase of
 *     their trigrams), close to them by trigrams (typos), the category's English stems; scored then by
 *     the keyword ranker's own formula (keyword-score.ts), as the embedded engine scores them;
 *   - k-NN (lucene HNSW, cosine) of the query's vector and of its WordNet definitions' vector;
 *   - the names holding the query's best WordNet expansions and kinds;
 *   - the name the query was written as, if it was.
 * A search needs no Postgres round trip. Each name's vector comes back with its hit, so the
 * scorer has every candidate's cosines.
 *
 * The index follows the inventory (OpenSearchInventory): the listing change feed wakes a sync
 * of the rows changed since the last one (inventory-changes.ts), new names are embedded once and
 * indexed with their vector, and a sale, reservation or price change indexes the name again, visible
 * within a second (the index refreshed once a sync's writes are done). The horizon reached is saved in the index,
 * so a restart carries on from it. With several search processes (hosts) on one index, one of
 * them writes each environment: the one holding its indexer lock (a Postgres session advisory
 * lock); the others read the index it writes, and its saved horizon tells them when to read the
 * vocabulary again. When the indexer dies its connection goes, the lock is free, and the next
 * process to poll takes it (within POLL_MS).
 */
import path from 'node:path';
import { Client } from '@opensearch-project/opensearch';
import type { Client as PgClient } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import type { Environment } from '../../config';
import type { ChangeFeed } from '../../db/change-feed';
import { dedicatedClient } from '../../db/dedicated-client';
import { labelOf } from '../../discovery/inventory';
import { queryWords } from '../../discovery/search';
import { cosine, type Embedder } from '../embedder';
import { EmbeddingCache, EmbeddingLogReader } from '../embedding-cache';
import { CANDIDATES, GLOSS_CANDIDATES, HybridScorer, PER_EXPANSION, type Found, type Gathered, type Vocabulary } from '../hybrid-search';
import type { Entry } from '../inventory-index';
import { followListings, inventoryPages, onMarket, SyncRunner, type InventoryRow } from '../inventory-changes';
import { keywordScore } from '../keyword-score';
import type { EngineStatus } from '../search-client';
import { segmentLabel } from '../segment';
import { Speller } from '../spelling';
import { decodeVector, documentId, encodeVector, indexSettings, MAPPING_VERSION, type NameDocument } from './mapping';

/** Rows read, embedded and written at a time. */
const PAGE = 2_000;
/** Keyword hits looked at before the keyword formula keeps the best CANDIDATES. */
const KEYWORD_PROBE = 200;
/** A sync runs at least this often, whatever the change feed says (it may be down). */
const POLL_MS = 2_000;
/** The first int4 of the indexer locks (admission 804_201 and 804_202, buy-now 804_203). */
const INDEXER_LOCK_SPACE = 804_204;
/** A process that does not write the index reads its vocabulary again at most this often, once the indexer has written. */
const VOCABULARY_MS = 10_000;
/**
 * A hit's whole stored source (which holds no `vector`, mapping.ts): a list of fields to keep made
 * the node compile a filter of automata for each search of each query, for a few bytes a hit.
 */
const SOURCE = true;
/** The document that holds an environment's horizon, beside its names. */
const HORIZON_DOC = (environment: Environment) => `__horizon:${environment}`;

export function openSearchClient(url: string): Client {
  return new Client({ node: url, requestTimeout: 10_000, maxRetries: 1 });
}

type Hit = { _id: string; _source: NameDocument; matched_queries?: string[] };
type SearchBody = { hits: { hits: Hit[] } };

/** Label and category, as Postgres' search_document holds them (the keyword ranker's `topical` match). */
const documentText = (row: Pick<InventoryRow, 'label' | 'category'>) => `${row.label} ${row.category.replace(/-/g, ' ')}`;

function entryOf(doc: NameDocument): Entry {
  return { name: doc.name, words: doc.words, available: doc.available, buyNowPriceCents: doc.buy_now_price_cents, currency: doc.currency };
}

/** The physical index the alias points at now, or undefined when there is no alias yet. */
export async function aliasTarget(client: Client, alias: string): Promise<string | undefined> {
  const exists = await client.indices.existsAlias({ name: alias });
  if (!exists.body) return undefined;
  const response = await client.indices.getAlias({ name: alias });
  return Object.keys(response.body as Record<string, unknown>)[0];
}

/** How many shards and replicas each new index gets (OPENSEARCH_SHARDS, OPENSEARCH_REPLICAS). */
export interface IndexLayout {
  shards?: number;
  replicas?: number;
}

/** Creates an index of this MAPPING_VERSION, named after the alias, the version and the time. */
export async function createVersionedIndex(client: Client, alias: string, layout: IndexLayout = {}): Promise<string> {
  const index = `${alias}-v${MAPPING_VERSION}-${Date.now()}`;
  await client.indices.create({ index, body: indexSettings(layout) });
  return index;
}

/**
 * The mapping version an index was made with (its mappings' `_meta`), and, when it is not this
 * code's, what an operator is told: the index is still searched, and a reindex builds one of this
 * version.
 */
export async function indexMapping(client: Client, alias: string, index: string): Promise<{ version: number | undefined; notice?: string }> {
  const response = await client.indices.getMapping({ index });
  const body = response.body as Record<string, { mappings?: { _meta?: { mapping_version?: unknown } } }>;
  const recorded = body[index]?.mappings?._meta?.mapping_version;
  const version = typeof recorded === 'number' ? recorded : undefined;
  if (version === MAPPING_VERSION) return { version };
  return {
    version,
    notice:
      `${alias} points at ${index}, an index of mapping version ${version ?? '(none recorded)'}, and this code's is ${MAPPING_VERSION}: ` +
      'it is searched meanwhile; `npm run admin -- search reindex` builds an index of this version and moves the alias to it, searches answering throughout',
  };
}

/**
 * The alias, made to point at a new index of its own when there is none yet. The first index has
 * a fixed name and gets the alias in the same request, so search processes starting together on
 * an empty cluster end with one index, not one each.
 */
export async function ensureAlias(client: Client, alias: string, layout: IndexLayout = {}): Promise<string> {
  const target = await aliasTarget(client, alias);
  if (target) return target;
  const index = `${alias}-v${MAPPING_VERSION}-0`;
  try {
    await client.indices.create({ index, body: { ...indexSettings(layout), aliases: { [alias]: {} } } });
  } catch (err) {
    if ((err as { body?: { error?: { type?: string } } }).body?.error?.type !== 'resource_already_exists_exception') throw err;
  }
  return (await aliasTarget(client, alias)) ?? index;
}

/**
 * One environment's names in the index: kept up with the inventory by this process while it is
 * the environment's indexer, read as the indexer writes them otherwise.
 */
export class OpenSearchInventory {
  /** The words of the names on the market, with how many hold each (from the index, then kept by each write, or read again). */
  speller = new Speller();
  private horizon: string | undefined;
  /** Syncs, one at a time (callers during one share the next). */
  private readonly syncs = new SyncRunner(async () => {
    await this.syncOnce();
    this.lastError = undefined;
  });
  /** Names in the index (kept by each write after the first count). */
  size = 0;
  private lastError: string | undefined;
  /** The connection that holds (or tries for) the indexer lock, and whether it holds it. */
  private lockClient: PgClient | undefined;
  indexer = false;
  /** A reader's last look at the index: the horizon its vocabulary was read at, and when. */
  private readAt = { horizon: undefined as string | undefined, time: 0 };
  private waitingLogged = false;
  /** During a first indexing: the embedded engine's log, read in place. */
  private seed: EmbeddingLogReader | undefined;
  /** While `load` runs: opens the embedded engine's log of this environment on this host (once, shared with the words' warm-up), if there is one. */
  private seedLog: (() => Promise<EmbeddingLogReader | undefined>) | undefined;

  constructor(
    readonly environment: Environment,
    private readonly dataSource: DataSource,
    private readonly client: Client,
    private readonly alias: string,
    private readonly embedder: Embedder,
    private readonly log: (m: string) => void,
  ) {}

  /**
   * The vocabulary and the saved horizon from the index, then the changes since (everything, the
   * first time); a reader waits until the indexer has finished a first indexing. `seedLog`: the
   * embedded engine's log on this host, which a first indexing takes its names' vectors from
   * (its caller closes it).
   */
  async load(seedLog?: () => Promise<EmbeddingLogReader | undefined>): Promise<void> {
    this.size = await this.count();
    await this.loadVocabulary(this.speller);
    this.seedLog = seedLog;
    try {
      for (;;) {
        await this.sync();
        if (this.horizon !== undefined) return;
        if (!this.waitingLogged) this.log(`${this.environment}: waiting for the indexer (another search process) to finish its first indexing of ${this.alias}…`);
        this.waitingLogged = true;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    } finally {
      this.seedLog = undefined;
    }
  }

  /** The names of this environment the index holds (as last refreshed). */
  private async count(): Promise<number> {
    const response = await this.client.count({ index: this.alias, body: { query: { term: { environment: this.environment } } } });
    return (response.body as { count: number }).count;
  }

  /** The horizon saved in the index by its indexer, if any. */
  private async savedHorizon(): Promise<string | undefined> {
    const saved = await this.client.get({ index: this.alias, id: HORIZON_DOC(this.environment) }, { ignore: [404] });
    const found = saved.body as { found?: boolean; _source?: { horizon?: string } };
    return found.found ? found._source?.horizon : undefined;
  }

  /**
   * Whether this process is the environment's indexer: it holds the lock, or takes it now (a
   * Postgres session advisory lock on a connection of its own, held until the process or the
   * connection ends). A data source without a URL cannot share a lock: its process indexes.
   */
  private async takeIndexer(): Promise<boolean> {
    if (this.indexer) return true;
    const url = (this.dataSource.options as PostgresDataSourceOptions).url;
    if (!url) return (this.indexer = true);
    this.lockClient ??= await dedicatedClient({ connectionString: url, keepAlive: true, connectionTimeoutMillis: 10_000 }, async (c) => {
      c.on('end', () => this.lockLost(c, 'its connection ended'));
    }, (c, err) => this.lockLost(c, err.message));
    // Raw SQL: a session advisory lock, which TypeORM does not express.
    const { rows } = await this.lockClient.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [INDEXER_LOCK_SPACE, `${this.alias}:${this.environment}`]);
    if (!rows[0].locked) return false;
    this.indexer = true;
    // What an indexer before this one wrote and did not refresh (it died mid-sync) is counted too.
    await refresh(this.client, this.alias);
    if ((await this.count()) !== this.size) await this.readVocabulary();
    // Carries on from what the index holds (the previous indexer's saved horizon).
    this.horizon = await this.savedHorizon();
    if (this.horizon === undefined && this.size > 0) {
      // A first indexing cut short (no horizon saved): what it wrote may include names that have
      // left the market since, which a full read would not see. Start that environment afresh.
      this.log(`${this.environment}: an unfinished first indexing of ${this.size} names found: indexing again`);
      await deleteEnvironment(this.client, this.alias, this.environment);
      this.size = 0;
      this.speller = new Speller();
    }
    this.log(`${this.environment}: this search process is the indexer of ${this.alias}${this.horizon === undefined ? ': indexing the names on the market…' : ''}`);
    return true;
  }

  private lockLost(client: PgClient, why: string): void {
    if (this.lockClient !== client) return;
    this.lockClient = undefined;
    if (this.indexer) this.log(`${this.environment}: the indexer lock was lost (${why}); whichever search process polls first indexes`);
    this.indexer = false;
    client.end().catch(() => undefined);
  }

  /** Lets the indexer lock go (on shutdown): another process takes it at its next poll. */
  async release(): Promise<void> {
    const client = this.lockClient;
    this.lockClient = undefined;
    this.indexer = false;
    await client?.end().catch(() => undefined);
  }

  /**
   * A reader's sync: the index's saved horizon, and when the indexer has written since the
   * vocabulary was read, the vocabulary and count again (at most every VOCABULARY_MS).
   */
  private async readIndex(): Promise<void> {
    const horizon = await this.savedHorizon();
    this.horizon = horizon;
    if (horizon === undefined || horizon === this.readAt.horizon || Date.now() - this.readAt.time < VOCABULARY_MS) return;
    await this.readVocabulary();
    this.readAt = { horizon, time: Date.now() };
  }

  /** The vocabulary and the count read again from the index (both replaced once read). */
  private async readVocabulary(): Promise<void> {
    const speller = new Speller();
    await this.loadVocabulary(speller);
    const count = await this.count();
    [this.speller, this.size] = [speller, count];
  }

  private async loadVocabulary(speller: Speller): Promise<void> {
    let after: Record<string, string> | undefined;
    for (;;) {
      const response = await this.client.search({
        index: this.alias,
        body: {
          size: 0,
          query: { term: { environment: this.environment } },
          aggs: { words: { composite: { size: 10_000, sources: [{ word: { terms: { field: 'words' } } }], ...(after ? { after } : {}) } } },
        },
      });
      const words = (response.body as unknown as { aggregations: { words: { buckets: Array<{ key: { word: string }; doc_count: number }>; after_key?: Record<string, string> } } }).aggregations.words;
      for (const bucket of words.buckets) speller.addWords([bucket.key.word], bucket.doc_count);
      if (!words.after_key || words.buckets.length === 0) return;
      after = words.after_key;
    }
  }

  /** The words of the names on the market, as the scorer needs them. */
  vocabulary(cache: EmbeddingCache): Vocabulary {
    return { speller: this.speller, hasWord: (w) => this.speller.isInventoryWord(w), cache };
  }

  /** Catches the index up with the inventory as committed when called (callers during a sync share the next one). */
  sync(): Promise<void> {
    return this.syncs.run();
  }

  /** Settles when no sync is under way (whatever its outcome). */
  settled(): Promise<void> {
    return this.syncs.settled();
  }

  /** Follows the change feed, with a poll beside it; returns a stop function. */
  follow(feed: ChangeFeed | undefined): () => void {
    const wake = () =>
      void this.sync().catch((err: Error) => {
        // Once per kind of failure: the poll retries it every POLL_MS.
        if (this.lastError !== err.message) this.log(`${this.environment}: OpenSearch sync failed (retried): ${err.message}`);
        this.lastError = err.message;
      });
    // Changes of the other environment's names are that environment's inventory's to follow.
    return followListings(feed, (environments) => (!environments || environments.has(this.environment)) && wake(), POLL_MS);
  }

  private async syncOnce(): Promise<void> {
    if (!(await this.takeIndexer())) return this.readIndex();
    if (this.horizon !== undefined) {
      await this.catchUp();
      return;
    }
    // A first indexing: the names the embedded engine embedded on this host are not embedded again.
    this.seed = await this.seedLog?.();
    let wrote: boolean;
    try {
      wrote = await this.catchUp();
    } finally {
      this.seed = undefined;
    }
    // Searches are answered meanwhile (from more segments, so more slowly).
    if (wrote) void forceMerge(this.client, this.alias, this.log).catch((err: Error) => this.log(`${this.environment}: merging ${this.alias}'s segments failed (they merge in their own time): ${err.message}`));
  }

  /**
   * Writes the inventory's changes since the horizon (every name, the first time) to the index,
   * and refreshes it (it has no scheduled refresh: mapping version 3): at the end, and every
   * REFRESH_EVERY_MS of a long catch-up (after downtime, an import) but a first indexing; also
   * when a page fails, so that what the pages before it wrote is searched. Whether it wrote.
   */
  private async catchUp(): Promise<boolean> {
    let horizon: string | undefined;
    let wrote = false;
    let unrefreshed = false;
    let refreshedAt = Date.now();
    try {
      for await (const page of inventoryPages(this.dataSource, this.environment, this.horizon, PAGE)) {
        horizon = page.horizon;
        if (!page.rows.length) continue;
        await this.write(this.alias, page.rows);
        wrote = unrefreshed = true;
        if (this.horizon !== undefined && Date.now() - refreshedAt >= REFRESH_EVERY_MS) {
          await refresh(this.client, this.alias);
          [unrefreshed, refreshedAt] = [false, Date.now()];
        }
        if (this.horizon === undefined && (this.size % 100_000) < PAGE && this.size >= PAGE) this.log(`  ${this.environment}: ${this.size} names indexed`);
      }
    } catch (err) {
      if (unrefreshed) await refresh(this.client, this.alias).catch(() => undefined);
      throw err;
    }
    if (unrefreshed) await refresh(this.client, this.alias);
    // Saved only after a write that succeeded (a restart then re-reads less); in memory, always.
    if (wrote || this.horizon === undefined) {
      await whenAccepted(() => this.client.index({ index: this.alias, id: HORIZON_DOC(this.environment), body: { environment: '__horizon', name: this.environment, horizon }, refresh: 'false' }));
    }
    this.horizon = horizon;
    return wrote;
  }

  private seeded(text: string): string | undefined {
    const vector = this.seed?.get(text);
    return vector && encodeVector(vector);
  }

  /**
   * Writes a page of changed rows to `index`: a name new to it is embedded and indexed, one it
   * holds is indexed again whole with the vector it has (availability, price, category: the
   * vector is no part of the stored source, so a partial update would drop it), one that left the
   * market is deleted. The vocabulary follows what the index answered (created, deleted).
   */
  async write(index: string, rows: InventoryRow[], vectors?: Map<string, string>): Promise<void> {
    const ids = rows.map((r) => documentId(this.environment, r.name));
    const existing = new Map<string, { words: string[]; vector_b64?: string }>();
    for (const doc of await lookUp<{ words: string[]; vector_b64?: string }>(this.client, index, ids, ['words', 'vector_b64'])) existing.set(doc._id, doc._source);
    const listed = rows.flatMap((row, i) => (onMarket(row) ? [{ row, id: ids[i] }] : []));
    const texts = await Promise.all(listed.map(({ row }) => segmentLabel(row.label)));
    const known = listed.map(({ row, id }, i) => existing.get(id)?.vector_b64 ?? vectors?.get(row.name) ?? this.seeded(texts[i]));
    const embedded = await this.embedder.embedAll(texts.filter((_, i) => known[i] === undefined));
    let next = 0;
    // Each operation its lines (action, then the document for index).
    const body: unknown[][] = [];
    const wordsOf = new Map<string, string[]>();
    rows.forEach((row, i) => {
      const held = existing.get(ids[i]);
      if (!onMarket(row) && held) {
        body.push([{ delete: { _index: index, _id: ids[i] } }]);
        wordsOf.set(ids[i], held.words);
      }
    });
    listed.forEach(({ row, id }, i) => {
      const text = texts[i];
      const words = text.split(' ').filter(Boolean);
      const encoded = known[i] ?? encodeVector(embedded[next++]);
      const doc: NameDocument = {
        environment: this.environment,
        name: row.name,
        label: row.label,
        text,
        words,
        document: documentText(row),
        available: row.status === 'listed',
        buy_now_price_cents: Number(row.buy_now_price_cents),
        currency: row.currency.trim(),
        vector: Array.from(decodeVector(encoded)),
        vector_b64: encoded,
      };
      body.push([{ index: { _index: index, _id: id } }, doc]);
      wordsOf.set(id, words);
    });
    if (body.length === 0) return;
    const items = await bulkWrite(this.client, body);
    let failed: string | undefined;
    for (const item of items) {
      const [op, result] = Object.entries(item)[0];
      if (result.error || result.status >= 300) {
        failed ??= `${op} ${result._id}: ${result.status} ${result.error?.reason ?? ''}`;
        continue;
      }
      if (index !== this.alias) continue;
      if (op === 'index' && result.result === 'created') {
        this.speller.addWords(wordsOf.get(result._id) ?? [], 1);
        this.size++;
      } else if (op === 'delete' && result.result === 'deleted') {
        this.speller.addWords(wordsOf.get(result._id) ?? [], -1);
        this.size--;
      }
    }
    if (failed) throw new Error(`OpenSearch refused a write (${failed})`);
  }

  /** The horizon this process has reached (reindex starts its own from the inventory). */
  get reached(): string | undefined {
    return this.horizon;
  }
}

/**
 * Operations per bulk request: a new name with its vector is ~10 KB of JSON, so ~4 MB (a page of
 * 2,000 in one request, ~20 MB, tripped a 512 MB node's memory breaker while it indexed 1M names).
 */
const BULK_OPERATIONS = 400;
/**
 * Bulk requests in flight at once. A shard indexes a bulk request's documents on one write
 * thread: one request at a time kept a 2-core node's JVM at ~75 % of one core while it indexed a
 * million names, with the search process and Postgres using a quarter of the rest (2026-11-29).
 */
const BULK_IN_FLIGHT = 2;
/** Waits before an indexing request the cluster pushed back (429: a full write queue, or a memory breaker tripped) is sent again. */
export const PUSHED_BACK_MS = [250, 500, 1_000, 2_000, 4_000, 8_000, 15_000, 30_000];

type BulkItem = Record<string, { _id: string; status: number; result?: string; error?: { reason?: string } }>;

const pushedBack = (err: unknown) => (err as { statusCode?: number }).statusCode === 429;

/**
 * An indexing request (never a search: a partner's search fails fast) that the cluster pushes
 * back (429: a memory breaker tripped, a full queue) is sent again after a growing wait, so a busy
 * or memory-short node slows indexing down rather than failing it; after the last wait the 429
 * stands. A look-up of 2,000 ids during a first indexing of 1M names on a 512 MB node tripped its
 * parent breaker, and ended the search process (2026-11-28).
 */
export async function whenAccepted<T>(request: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await request();
    } catch (err) {
      if (!pushedBack(err) || attempt >= PUSHED_BACK_MS.length) throw err;
      await new Promise((resolve) => setTimeout(resolve, PUSHED_BACK_MS[attempt]));
    }
  }
}

/**
 * The documents of these ids that `index` holds (those fields of their source), looked up
 * BULK_OPERATIONS ids a request: 2,000 at once tripped a 512 MB node's parent breaker.
 */
async function lookUp<T>(client: Client, index: string, ids: string[], fields: string[]): Promise<Array<{ _id: string; _source: T }>> {
  const found: Array<{ _id: string; _source: T }> = [];
  for (let at = 0; at < ids.length; at += BULK_OPERATIONS) {
    const response = await whenAccepted(() => client.mget({ index, body: { ids: ids.slice(at, at + BULK_OPERATIONS) }, _source: fields } as Parameters<Client['mget']>[0]));
    for (const doc of (response.body as { docs: Array<{ _id: string; found: boolean; _source?: T }> }).docs) if (doc.found) found.push({ _id: doc._id, _source: doc._source! });
  }
  return found;
}

/**
 * Sends the operations in bulk requests of BULK_OPERATIONS, BULK_IN_FLIGHT at a time (a caller
 * gives each document one operation, so their order does not matter). What the
 * cluster pushes back (the request, or single operations: status 429) is sent again after a
 * growing wait, so that a busy or memory-short node slows indexing down rather than failing it;
 * after the last wait the 429 stands (the caller's sync fails and is retried). Returns one item
 * per operation. The caller refreshes the index when it has written all it had to.
 */
export async function bulkWrite(client: Client, operations: unknown[][]): Promise<BulkItem[]> {
  const out: BulkItem[] = [];
  const send = async (ops: unknown[][]) => {
    let pending = ops;
    // One count of waits for the request and its operations (whenAccepted's would nest in it).
    for (let attempt = 0; ; attempt++) {
      const again = attempt < PUSHED_BACK_MS.length;
      let items: BulkItem[];
      try {
        const response = await client.bulk({ body: pending.flat() as Record<string, unknown>[] });
        items = (response.body as { items: BulkItem[] }).items;
      } catch (err) {
        if (!pushedBack(err) || !again) throw err;
        await new Promise((resolve) => setTimeout(resolve, PUSHED_BACK_MS[attempt]));
        continue;
      }
      const refused = items.flatMap((item, i) => (Object.values(item)[0].status === 429 && again ? [i] : []));
      out.push(...items.filter((_, i) => !refused.includes(i)));
      if (!refused.length) return;
      pending = refused.map((i) => pending[i]);
      await new Promise((resolve) => setTimeout(resolve, PUSHED_BACK_MS[attempt]));
    }
  };
  const requests: unknown[][][] = [];
  for (let at = 0; at < operations.length; at += BULK_OPERATIONS) requests.push(operations.slice(at, at + BULK_OPERATIONS));
  // On a failure the other requests under way end before it is thrown (nothing is written after
  // the caller hears of it), and no more are sent.
  let next = 0;
  let failed: { err: unknown } | undefined;
  const sender = async () => {
    while (next < requests.length && !failed) {
      try {
        await send(requests[next++]);
      } catch (err) {
        failed ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(BULK_IN_FLIGHT, requests.length) }, sender));
  if (failed) throw failed.err;
  return out;
}

/**
 * The size a force merge aims each segment at: under the merge policy's largest
 * (`index.merge.policy.max_merged_segment`, 5 GB), which a forced merge may pass by a quarter.
 */
const MERGED_SEGMENT_BYTES = 4 * 1024 ** 3;
/** How often a force merge's task is asked whether it has finished, and how many failed asks in a row end the wait. */
const MERGE_POLL_MS = 2_000;
const MERGE_POLL_FAILURES = 5;
/** A refresh after a bulk load writes its indexing buffer out: longer than a search's timeout. */
const REFRESH_TIMEOUT_MS = 5 * 60_000;
/** How often a long catch-up makes what it wrote searchable. */
const REFRESH_EVERY_MS = 1_000;

/** Makes what was written to the index searchable (it has no scheduled refresh: mapping version 3). */
async function refresh(client: Client, index: string): Promise<void> {
  await client.indices.refresh({ index }, { requestTimeout: REFRESH_TIMEOUT_MS });
}

/**
 * Deletes an environment's documents, as `_delete_by_query` would (the local node has no reindex
 * module, which serves it): their ids read in pages by name, deleted in bulk, then refreshed.
 */
async function deleteEnvironment(client: Client, index: string, environment: Environment): Promise<void> {
  let after: unknown[] | undefined;
  for (;;) {
    const body = { size: BULK_OPERATIONS, _source: false, query: { term: { environment } }, sort: [{ name: 'asc' }], ...(after ? { search_after: after } : {}) };
    const response = await whenAccepted(() => client.search({ index, body } as Parameters<Client['search']>[0]));
    const hits = (response.body as unknown as { hits: { hits: Array<{ _id: string; sort: unknown[] }> } }).hits.hits;
    if (!hits.length) break;
    await bulkWrite(client, hits.map((h) => [{ delete: { _index: index, _id: h._id } }]));
    after = hits[hits.length - 1].sort;
  }
  await refresh(client, index);
}

/**
 * Merges a bulk-loaded index's segments, each shard's into as few as keep each near 4 GB, within
 * the merge policy's largest (so that they stay eligible for its merges as names change): a k-NN search
 * visits each segment's graph and a keyword probe each segment's terms, and a fresh index of a
 * million names had 66–93 segments. Run as a task and polled (merging a million names' graphs
 * takes minutes); settles when the merge has.
 */
export async function forceMerge(client: Client, index: string, log: (m: string) => void): Promise<void> {
  const started = Date.now();
  const stats = await client.indices.stats({ index, metric: 'store', level: 'shards' });
  const shards = Object.values((stats.body as { indices: Record<string, { shards: Record<string, Array<{ routing: { primary: boolean }; store: { size_in_bytes: number } }>> }> }).indices)
    .flatMap((i) => Object.values(i.shards).flat())
    .filter((s) => s.routing.primary);
  const largest = Math.max(0, ...shards.map((s) => s.store.size_in_bytes));
  const segments = Math.max(1, Math.ceil(largest / MERGED_SEGMENT_BYTES));
  const response = await whenAccepted(() => client.indices.forcemerge({ index, max_num_segments: segments, wait_for_completion: false }));
  // A cluster that waits for the merge answers without a task.
  const task = (response.body as { task?: string }).task;
  for (let failures = 0; task; ) {
    await new Promise((resolve) => setTimeout(resolve, MERGE_POLL_MS));
    let status;
    try {
      status = await client.tasks.get({ task_id: task }, { ignore: [404] });
      failures = 0;
    } catch (err) {
      if (++failures >= MERGE_POLL_FAILURES) throw err;
      continue;
    }
    // Not found: its result was not kept (its node restarted); the merge is only an optimisation.
    if (status.statusCode === 404) break;
    const body = status.body as { completed?: boolean; error?: { reason?: string } };
    if (body.error) throw new Error(body.error.reason ?? JSON.stringify(body.error));
    if (body.completed) break;
  }
  // Searched from the merged segments once refreshed.
  await refresh(client, index);
  log(`${index}: segments merged into ${segments} a shard (${(largest / 1024 ** 2).toFixed(0)} MB its largest shard before) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Escapes a word for a wildcard pattern (query words are letters and digits already). */
const literal = (w: string) => w.replace(/[\\*?]/g, '\\$&');

/**
 * Labels holding the word (SQL's `LIKE '%word%'`). A word of three or more letters and digits is
 * the phrase of its trigrams in `label.trigram`, scored as the wildcard was (a constant 1): every
 * name `*word*` on `label.infix` finds (tested), without its cost (the wildcard compiled automata
 * for each word of each search, ~20 % of the node's CPU samples under load). The ngram tokenizer
 * places all of a label's trigrams one position apart, across a hyphen too, so the phrase also
 * finds a label whose runs overlap by two letters there (`bio-ionic` for `bionic`): such a
 * candidate is scored by the ranker's formula like any other, and the spelling's look-up keeps
 * only labels that hold the word. Any other word (shorter, or not letters and digits) keeps the
 * wildcard.
 */
export function infixQuery(word: string): Record<string, unknown> {
  if (/^[a-z0-9]{3,}$/.test(word)) return { constant_score: { filter: { match_phrase: { 'label.trigram': { query: word } } } } };
  return { wildcard: { 'label.infix': { value: `*${literal(word)}*` } } };
}

/** How often a loaded engine reads its alias's mapping version again. */
export const MAPPING_RECHECK_MS = 60_000;

/**
 * The mapping version of the index an alias points at (null: none recorded; undefined: not read
 * yet), for /status. Read when the engine loads, then each MAPPING_RECHECK_MS, so that a reindex
 * done by another search process shows here within a minute; set at once by this process's own.
 * An index of another version than this code's is still searched: the log says so (and how to
 * build one of this version) when first seen and again whenever the alias moves. A read that
 * fails is only logged: searches go on, and the next check reads it again.
 */
export class MappingWatch {
  version: number | null | undefined;
  private index: string | undefined;
  private checking: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Counts this process's own moves: a read begun before one is not kept. */
  private moves = 0;

  constructor(
    private readonly client: Client,
    private readonly alias: string,
    private readonly log: (m: string) => void,
  ) {}

  get watching(): boolean {
    return this.timer !== undefined;
  }

  /** Reads the alias's target and its mapping version (one read at a time). */
  check(): Promise<void> {
    return (this.checking ??= this.read().finally(() => (this.checking = undefined)));
  }

  /** Checks every `ms` (unref'd); returns the stop. */
  every(ms: number): () => void {
    clearInterval(this.timer);
    this.timer = setInterval(() => void this.check(), ms);
    this.timer.unref();
    return () => {
      clearInterval(this.timer);
      this.timer = undefined;
    };
  }

  /** This process moved the alias to `index`, of `version`. */
  moved(index: string, version: number): void {
    this.moves++;
    this.index = index;
    this.version = version;
  }

  private async read(): Promise<void> {
    const moves = this.moves;
    try {
      const index = await aliasTarget(this.client, this.alias);
      if (!index) return;
      const { version, notice } = await indexMapping(this.client, this.alias, index);
      if (moves !== this.moves) return;
      if (index !== this.index && this.index !== undefined && version !== this.version) this.log(`${this.alias} now points at ${index}, of mapping version ${version ?? '(none recorded)'}`);
      if (notice && index !== this.index) this.log(notice);
      this.index = index;
      this.version = version ?? null;
    } catch (err) {
      this.log(`could not read the mapping version of ${this.alias}: ${(err as Error).message}`);
    }
  }
}

export class OpenSearchSearch extends HybridScorer {
  private readonly inventories = new Map<Environment, OpenSearchInventory>();
  private stops: Array<() => void> = [];
  private reindexing: Promise<ReindexReport> | undefined;

  constructor(
    private readonly dataSource: DataSource,
    embedder: Embedder,
    readonly client: Client,
    readonly alias: string,
    /** Word and sense vectors (the names' vectors are in the index). */
    private readonly cache: EmbeddingCache,
    log: (m: string) => void = () => undefined,
    private readonly layout: IndexLayout = {},
    /** Where the embedded engine keeps an environment's vectors on this host (a first indexing reads them). */
    private readonly embeddingLog?: (environment: Environment) => string,
  ) {
    super(embedder, log);
    this.mapping = new MappingWatch(client, alias, log);
  }

  inventory(environment: Environment): OpenSearchInventory {
    let inventory = this.inventories.get(environment);
    if (!inventory) this.inventories.set(environment, (inventory = new OpenSearchInventory(environment, this.dataSource, this.client, this.alias, this.embedder, this.log)));
    return inventory;
  }

  /** The mapping version of the index the alias points at, for /status (MappingWatch). */
  private readonly mapping: MappingWatch;

  /** The alias (made on first use), then each environment caught up with the inventory and its words embedded. */
  async load(environment: Environment, feed?: ChangeFeed): Promise<OpenSearchInventory> {
    await ensureAlias(this.client, this.alias, this.layout);
    await this.mapping.check();
    // Read again each minute while loaded: another search process's reindex shows in /status.
    if (!this.mapping.watching) this.stops.push(this.mapping.every(MAPPING_RECHECK_MS));
    const inventory = this.inventory(environment);
    // A first start: the names, words and senses the embedded engine embedded on this host are
    // not embedded again. Its log is read (~8.5 s a million texts) when first needed, once.
    const file = this.embeddingLog?.(environment);
    let opened: Promise<EmbeddingLogReader | undefined> | undefined;
    const seedLog = () =>
      (opened ??= (file ? EmbeddingLogReader.open(file) : Promise.resolve(undefined)).then((reader) => {
        if (reader) this.log(`${environment}: ${reader.size} vectors taken from the embedded engine's log (${path.basename(file!)})`);
        return reader;
      }));
    try {
      await inventory.load(seedLog);
      this.stops.push(inventory.follow(feed));
      const words = [...this.speller(environment).words()];
      await this.warm(environment, words, inventory.vocabulary(this.cache), words.some((w) => !this.cache.has(w)) ? await seedLog() : undefined);
    } finally {
      if (opened) (await opened.catch(() => undefined))?.close();
    }
    return inventory;
  }

  private speller(environment: Environment): Speller {
    return this.inventory(environment).speller;
  }

  /** On shutdown: the polls stop, a sync under way finishes (before the database closes), the word vectors are kept. */
  async save(): Promise<void> {
    for (const stop of this.stops.splice(0)) stop();
    await Promise.all([...this.inventories.values()].map((inventory) => inventory.settled()));
    await Promise.all([...this.inventories.values()].map((inventory) => inventory.release()));
    this.cache.save();
    await this.client.close();
  }

  /** Names on the market whose label holds the word (a look-up for the spelling's whole-word check). */
  private async namesContaining(environment: Environment, word: string, limit: number): Promise<Entry[]> {
    const response = await this.client.search({
      index: this.alias,
      body: { size: limit, _source: SOURCE, query: { bool: { filter: [{ term: { environment } }, infixQuery(word)] } } },
    });
    // The trigram phrase can join two of a label's runs across a hyphen (infixQuery).
    return (response.body as SearchBody).hits.hits.map((h) => entryOf(h._source)).filter((entry) => labelOf(entry.name).includes(word));
  }

  protected async gather(environment: Environment, query: string, asName?: string): Promise<Gathered> {
    const inventory = this.inventory(environment);
    const vocabulary = inventory.vocabulary(this.cache);
    const corrected = await this.corrected(vocabulary, query, (w, limit) => this.namesContaining(environment, w, limit));
    const u = await this.understood(corrected, await this.meaning(corrected), vocabulary);
    const inEnvironment = { term: { environment } };
    const searches: Array<{ kind: 'keyword' | 'near' | 'expansion' | 'named'; body: Record<string, unknown> }> = [
      { kind: 'keyword', body: this.keywordQuery(environment, corrected, inventory.speller) },
      { kind: 'near', body: { size: CANDIDATES, _source: SOURCE, query: { knn: { vector: { vector: Array.from(u.queryVector), k: CANDIDATES, filter: inEnvironment } } } } },
    ];
    if (u.glossVector) searches.push({ kind: 'near', body: { size: GLOSS_CANDIDATES, _source: SOURCE, query: { knn: { vector: { vector: Array.from(u.glossVector), k: GLOSS_CANDIDATES, filter: inEnvironment } } } } });
    for (const w of HybridScorer.expansionTerms(u)) {
      searches.push({ kind: 'expansion', body: { size: PER_EXPANSION, _source: SOURCE, query: { bool: { filter: [inEnvironment, { term: { words: w } }] } }, sort: [{ name: 'asc' }] } });
    }
    if (asName !== undefined) searches.push({ kind: 'named', body: { size: 1, _source: SOURCE, query: { bool: { filter: [inEnvironment, { term: { name: asName } }] } } } });
    const response = await this.client.msearch({ index: this.alias, body: searches.flatMap((s) => [{}, s.body]) });
    const responses = (response.body as { responses: Array<SearchBody & { error?: { reason?: string } }> }).responses;

    const found = new Map<string, Found>();
    const add = (hit: Hit, keyword = 0) => {
      const doc = hit._source;
      const vector = doc.vector_b64 ? decodeVector(doc.vector_b64) : undefined;
      const known = found.get(doc.name);
      if (known) known.keyword = Math.max(known.keyword, keyword);
      else found.set(doc.name, { entry: entryOf(doc), name: vector ? cosine(vector, u.queryVector) : 0, glossName: vector && u.glossVector ? cosine(vector, u.glossVector) : 0, keyword });
    };
    let named: Entry | undefined;
    responses.forEach((r, i) => {
      // The whole error when it gives no reason (one under load at 100k names gave an empty one).
      if (r.error) throw new Error(`OpenSearch refused a search (${searches[i].kind}): ${r.error.reason || JSON.stringify(r.error)}`);
      const hits = r.hits.hits;
      if (searches[i].kind === 'keyword') for (const { hit, score } of this.keywordHits(hits, corrected)) add(hit, score);
      else if (searches[i].kind === 'named') named = hits[0] ? entryOf(hits[0]._source) : undefined;
      else for (const hit of hits) add(hit);
    });
    return { found: [...found.values()], named, understanding: u, cache: this.cache };
  }

  /**
   * The keyword ranker's candidates (src/discovery/search.ts) asked of the index: the label is
   * the query run together, holds it or one of its words (or a variant of one), is close to a
   * word the speller does not know by trigrams, or the category matches; BM25 over the label's
   * words besides. Scored by the ranker's own formula afterwards. The BM25 clause is not fuzzy:
   * a typo is the speller's (the query comes corrected) and the trigram clause's, as in the
   * embedded engine, and a fuzzy match built Levenshtein automata for each word of each search
   * (~17 % of the node's CPU samples under load once the wildcards were gone; an A/B at 4k names,
   * 18.4 and 17.8 ms of the node's CPU a search against 19.4, is within the run-to-run spread).
   */
  private keywordQuery(environment: Environment, corrected: string, speller: Speller): Record<string, unknown> {
    const words = queryWords(corrected);
    const joined = words.join('');
    const should: unknown[] = [
      { term: { label: { value: joined, _name: 'exact' } } },
      { match: { document: { query: words.join(' '), operator: 'and', _name: 'topical' } } },
      { match: { text: { query: words.join(' ') } } },
    ];
    for (const w of new Set([joined, ...words.filter((x) => x.length >= 3)])) {
      should.push(infixQuery(w));
      if (w.length >= 4 && !speller.isKnown(w) && (w !== joined || words.length === 1)) should.push({ match: { 'label.trigram': { query: w, minimum_should_match: '45%' } } });
      for (const v of w === joined && words.length > 1 ? [] : speller.variants(w)) should.push(infixQuery(v));
    }
    return { size: KEYWORD_PROBE, _source: SOURCE, query: { bool: { filter: [{ term: { environment } }], should, minimum_should_match: 1 } } };
  }

  /** The keyword hits the ranker's formula keeps, best first, CANDIDATES at most (its order: score, listed first, shorter, name). */
  private keywordHits(hits: Hit[], corrected: string): Array<{ hit: Hit; score: number }> {
    const words = queryWords(corrected);
    const scored: Array<{ hit: Hit; score: number }> = [];
    for (const hit of hits) {
      const score = keywordScore(hit._source.label, words, hit.matched_queries?.includes('topical') ?? false);
      if (score !== undefined) scored.push({ hit, score });
    }
    return scored
      .sort((a, b) => b.score - a.score || Number(b.hit._source.available) - Number(a.hit._source.available) || a.hit._source.name.length - b.hit._source.name.length || (a.hit._source.name < b.hit._source.name ? -1 : 1))
      .slice(0, CANDIDATES);
  }

  /** What /status says of an environment. */
  status(environment: Environment): EngineStatus {
    const inventory = this.inventory(environment);
    return { names: inventory.size, pendingVectors: 0, vectorIndex: 'opensearch', building: this.reindexing !== undefined, indexer: inventory.indexer, mappingVersion: this.mapping.version, expectedMappingVersion: MAPPING_VERSION };
  }

  /**
   * `admin search reindex`: builds a new index of this MAPPING_VERSION from the inventory (each
   * name's vector taken from the index in use, embedded only when it has none), merges its
   * segments (forceMerge), catches it up
   * with the changes made meanwhile, then moves the alias to it in one step and drops the old
   * one. Searches answer from the old index until the move and from the new one after: none
   * fails. The syncs keep writing through the alias all along; the new index's own catch-up
   * after the move covers any change written to the old one meanwhile.
   */
  reindex(): Promise<ReindexReport> {
    this.reindexing ??= this.rebuild().finally(() => (this.reindexing = undefined));
    return this.reindexing;
  }

  private async rebuild(): Promise<ReindexReport> {
    const started = Date.now();
    const from = await aliasTarget(this.client, this.alias);
    const index = await createVersionedIndex(this.client, this.alias, this.layout);
    const names: Record<string, number> = {};
    const horizons = new Map<Environment, string>();
    /** The changes since each environment's horizon, written to the new index. */
    const catchUp = async () => {
      for (const [environment, inventory] of this.inventories) {
        let horizon: string | undefined;
        for await (const page of inventoryPages(this.dataSource, environment, horizons.get(environment), PAGE)) {
          horizon = page.horizon;
          if (page.rows.length) await inventory.write(index, page.rows, await this.vectorsOf(environment, page.rows));
        }
        await whenAccepted(() => this.client.index({ index, id: HORIZON_DOC(environment), body: { environment: '__horizon', name: environment, horizon } }));
        horizons.set(environment, horizon!);
      }
      await refresh(this.client, index);
    };
    try {
      for (const [environment, inventory] of this.inventories) {
        names[environment] = 0;
        for await (const page of inventoryPages(this.dataSource, environment, undefined, PAGE)) {
          horizons.set(environment, page.horizon);
          if (!page.rows.length) continue;
          await inventory.write(index, page.rows, await this.vectorsOf(environment, page.rows));
          names[environment] += page.rows.length;
        }
      }
      // Merged before the move, while the old index answers: the new one is searched settled.
      await forceMerge(this.client, index, this.log);
      await catchUp();
      await this.client.indices.updateAliases({ body: { actions: [...(from ? [{ remove: { index: from, alias: this.alias } }] : []), { add: { index, alias: this.alias } }] } });
      this.mapping.moved(index, MAPPING_VERSION);
    } catch (err) {
      // Not moved (or not known to be): the new index goes unless the alias points at it now.
      if ((await aliasTarget(this.client, this.alias).catch(() => index)) !== index) await this.client.indices.delete({ index }, { ignore: [404] }).catch(() => undefined);
      throw err;
    }
    // Changes the syncs wrote to the old index between the catch-up and the move. The alias is
    // moved already: a failure here leaves the new index in use (the syncs keep it up) and the
    // old one in place for an operator to drop.
    await catchUp();
    if (from) await this.client.indices.delete({ index: from }, { ignore: [404] });
    this.log(`reindexed into ${index} (was ${from ?? 'none'}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return { alias: this.alias, index, previous: from, names, seconds: Math.round((Date.now() - started) / 100) / 10 };
  }

  /** The vectors the index in use holds for these rows' names (base64), by name. */
  private async vectorsOf(environment: Environment, rows: InventoryRow[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const doc of await lookUp<{ name: string; vector_b64?: string }>(this.client, this.alias, rows.map((r) => documentId(environment, r.name)), ['name', 'vector_b64'])) {
      if (doc._source.vector_b64) out.set(doc._source.name, doc._source.vector_b64);
    }
    return out;
  }
}

export interface ReindexReport {
  alias: string;
  index: string;
  previous?: string;
  /** Names written, by environment. */
  names: Record<string, number>;
  seconds: number;
}
