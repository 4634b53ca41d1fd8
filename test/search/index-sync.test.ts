/**
 * The in-memory search index following the inventory: spelling and WordNet expansion of the
 * query, the xid-horizon sync, sales / delistings / price changes reaching search without a
 * restart, and the two vector indexes (exact scan and HNSW graph) on their own.
 *
 * Names made here start with `zzsync` (live inventory) and leave the market when the file is
 * done, so that other tests' live searches never see them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { isDeepStrictEqual, promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { setImmediate } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import type { Environment } from '../../src/config';
import { importInventory, type InventoryRow } from '../../src/discovery/inventory';
import { Embedder } from '../../src/search/embedder';
import { EmbeddingCache } from '../../src/search/embedding-cache';
import { HybridScorer, HybridSearch, type Gathered } from '../../src/search/hybrid-search';
import { entryText, graphFileName, InventoryIndex } from '../../src/search/inventory-index';
import { SyncRunner } from '../../src/search/inventory-changes';
import { expansionWords, glossedQuery } from '../../src/search/lexicon';
import { cachedModelFiles } from '../../src/search/model-files';
import { Speller } from '../../src/search/spelling';
import { ExactIndex, HnswIndex, toInt8, VectorStore } from '../../src/search/vector-index';
import { asKept, byDot, dot, FakeEmbedder, loopWatch, seeded, unitVector } from '../helpers/search-fakes';
import { getStack, newPartner } from '../helpers/stack';
import { SEARCH_SHOWS_CHANGE_WITHIN_MS as SHOWN_WITHIN_MS, waitFor } from '../helpers/wait';

type Hit = { name: string; available: boolean; buy_now_price_cents: number; currency: string; score: number };
type Client = Awaited<ReturnType<typeof newPartner>>['client'];

async function search(client: Client, q: string): Promise<Hit[]> {
  const res = await client.get<{ data: Hit[] }>(`/api/partner/v1/domains/search?q=${encodeURIComponent(q)}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

function listing(name: string, overrides: Partial<InventoryRow> = {}): InventoryRow {
  return { name, category: 'general', buy_now_price_cents: 250_000, floor_price_cents: 100_000, currency: 'USD', status: 'listed', active_site: false, registered_year: 2019, ...overrides };
}


/** The slots by the store's own cosine with the query (its vectors as it keeps them, summed by its kernels), best first: a brute force. */
function byStoreDot(store: VectorStore, slots: Iterable<number>, query: Float32Array, k?: number): number[] {
  const handle = store.query(query);
  const ranked = [...slots].map((slot): [number, number] => [slot, store.dot(slot, handle)]).sort((a, b) => b[1] - a[1]);
  return ranked.slice(0, k ?? ranked.length).map(([slot]) => slot);
}

describe('search index: spelling and query expansion', () => {
  it('Speller corrects typos towards the inventory words first, and leaves English words, names and short words alone', () => {
    const speller = new Speller();
    speller.addWords(['coffee', 'puppy', 'pup', 'restaurant', 'diamond']);
    assert.equal(speller.correct('cofee'), 'coffee');
    // Without the inventory words English alone says `pupa`: the inventory comes first.
    assert.equal(new Speller().correct('pupy'), 'pupa');
    assert.equal(speller.correct('pupy'), 'puppy');
    assert.equal(speller.correct('restuarant'), 'restaurant');
    assert.equal(speller.correct('dimond'), 'diamond');
    for (const known of ['pinot', 'soccer', 'patisserie']) assert.equal(speller.correct(known), known);
    assert.equal(speller.correctQuery('Solar  Pannels'), 'solar panels');
    // `puq` is one edit from the inventory word `pup`, but 3-letter words are never corrected.
    assert.equal(speller.isKnown('puq'), false);
    assert.equal(speller.correct('puq'), 'puq');
  });

  it('Speller forgets a word once no name holds it', () => {
    const speller = new Speller();
    speller.addWords(['puppy']);
    speller.addWords(['puppy']);
    speller.addWords(['puppy'], -1);
    assert.equal(speller.correct('pupy'), 'puppy', 'one name still holds it');
    speller.addWords(['puppy'], -1);
    assert.equal(speller.correct('pupy'), 'pupa');
  });

  it('expansionWords: synonyms and definition words of words and two-word phrases from WordNet', async () => {
    const patisserie = await expansionWords(['patisserie']);
    assert.ok(patisserie.has('bakery') && patisserie.has('pastry'), [...patisserie].join(' '));
    assert.ok(!patisserie.has('patisserie'), 'the query word itself is left out');
    const soccer = await expansionWords(['soccer']);
    assert.ok(soccer.has('goal') || soccer.has('ball'), [...soccer].join(' '));
    // `global_warming` is "an increase in the average temperature of the earth's atmosphere …";
    // neither word alone gives `temperature` or `climatic`.
    const phrase = await expansionWords(['global', 'warming']);
    const alone = new Set([...(await expansionWords(['global'])), ...(await expansionWords(['warming']))]);
    for (const w of ['temperature', 'atmosphere', 'climatic']) {
      assert.ok(phrase.has(w), `${w} in ${[...phrase].join(' ')}`);
      assert.ok(!alone.has(w), `${w} comes from the phrase only`);
    }
  });

  it("a query's meaning is kept for its next searches: each text embedded once, two searches at once share it; a failed one is not kept", async () => {
    class Probe extends HybridScorer {
      protected gather(): Promise<Gathered> {
        throw new Error('no inventory here');
      }
      ask(query: string) {
        return this.meaning(query);
      }
    }
    const embedder = new FakeEmbedder();
    const probe = new Probe(embedder as unknown as Embedder);
    const [first, second] = await Promise.all([probe.ask('patisserie'), probe.ask('patisserie')]);
    assert.equal(first, second, 'two at once share one');
    // The query and the query with its WordNet definitions, each once.
    assert.deepEqual(embedder.calls.map(([text]) => text.split(':')[0]), ['patisserie', 'patisserie']);
    assert.ok(first[2].has('bakery') && first[1] !== undefined);
    assert.equal(await probe.ask('patisserie'), first);
    assert.equal(embedder.calls.length, 2, 'asked again: nothing embedded');

    const down = Promise.reject(new Error('model down'));
    down.catch(() => undefined);
    embedder.gate = down;
    await assert.rejects(probe.ask('zzyzx'), /model down/);
    embedder.gate = undefined;
    const calls = embedder.calls.length;
    const mended = await probe.ask('zzyzx');
    assert.equal(mended[1], undefined, 'WordNet has no definition of it');
    assert.deepEqual(mended[0], FakeEmbedder.vector('zzyzx'));
    assert.equal(embedder.calls.length, calls + 1, 'the failure was not kept: embedded again');
  });
});

/**
 * Turns of the event loop, at least, while 20,000 names are read and applied: the fake
 * inventory's read gives the loop a turn every 1,000 rows (20), and the apply's 10 ms slices over
 * a hundred more on this host (in one piece, ~1.4 s: none).
 */
const TURNS_WHILE_APPLIED = 40;

describe('search index: following the inventory', () => {
  const made: string[] = [];
  let embedder: Embedder;

  before(async () => {
    const files = cachedModelFiles(getStack().config.toolCacheDir);
    assert.ok(files, 'model files in the tool cache');
    embedder = await Embedder.load(files);
  });

  async function put(rows: InventoryRow[]): Promise<void> {
    made.push(...rows.map((r) => r.name));
    await importInventory(getStack().dataSource, 'live', rows);
  }

  after(async () => {
    // Off the market, so that later live searches in other files never meet them.
    await getStack().dataSource.query(`UPDATE domains SET status = 'unlisted', updated_at = now() WHERE environment = 'live' AND name = ANY($1) AND status IN ('listed', 'reserved')`, [made]);
  });

  it('a sync sees a change made by a transaction that was still open during the previous sync', async () => {
    const { dataSource } = getStack();
    const a = 'zzsyncopenwriter.com';
    const b = 'zzsynclatecomer.com';
    await put([listing(a)]);
    const index = await new HybridSearch(dataSource, embedder, new EmbeddingCache()).index('live');
    await index.load();
    assert.notEqual(index.slot(a), undefined, 'A on the market after the first load');
    assert.equal(index.slot(b), undefined);

    const runner = dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      // The sale's transaction takes its xid first, and commits last.
      await runner.query(`UPDATE domains SET status = 'sold', updated_at = now() WHERE environment = 'live' AND name = $1`, [a]);
      await put([listing(b)]); // another connection, a later xid, committed
      await index.refresh();
      assert.notEqual(index.slot(b), undefined, 'B, committed, is seen');
      assert.notEqual(index.slot(a), undefined, 'the sale of A is not committed yet');
      assert.ok(index.hasVector(index.slot(b)!), 'a few new names are embedded before refresh returns');
      await runner.commitTransaction();
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await runner.release();
    }
    await index.refresh();
    assert.equal(index.slot(a), undefined, 'the sale, committed after the previous sync began, is seen');
    assert.notEqual(index.slot(b), undefined);
  });

  it('a sale, a delisting and a price change show in search results without a restart', async () => {
    const { dataSource } = getStack();
    const { client } = await newPartner({ environment: 'live', scopes: ['search'] });
    const sold = 'zzsyncvelvetkayak.com';
    const delisted = 'zzsyncmarbleorchid.com';
    const repriced = 'zzsynccopperlantern.com';
    await put([listing(sold), listing(delisted), listing(repriced, { buy_now_price_cents: 410_000 })]);

    const find = async (name: string) => (await search(client, name.slice(0, name.indexOf('.')))).find((h) => h.name === name);
    const shown = (h: Hit | undefined) => h && { name: h.name, available: h.available, price: h.buy_now_price_cents };
    // A change is searched once its notification has come (at commit, over the change feed): within SHOWN_WITHIN_MS.
    await waitFor(
      () => Promise.all([sold, delisted, repriced].map(find)),
      (before) =>
        isDeepStrictEqual(before.map(shown), [
          { name: sold, available: true, price: 250_000 },
          { name: delisted, available: true, price: 250_000 },
          { name: repriced, available: true, price: 410_000 },
        ]),
      SHOWN_WITHIN_MS,
      'the three listings shown',
    );

    // A sale is marked the way src/orders/orders.ts marks it.
    await dataSource.query(`UPDATE domains SET status = 'sold', reserved_by_quote_id = NULL, updated_at = now() WHERE environment = 'live' AND name = $1`, [sold]);
    await put([listing(delisted, { status: 'unlisted' })]);
    await put([listing(repriced, { buy_now_price_cents: 385_000, floor_price_cents: 300_000 })]);

    await waitFor(() => find(sold), (h) => h === undefined, SHOWN_WITHIN_MS, 'a sold name leaves the results');
    await waitFor(() => find(delisted), (h) => h === undefined, SHOWN_WITHIN_MS, 'a delisted name leaves the results');
    await waitFor(() => find(repriced), (h) => h?.buy_now_price_cents === 385_000, SHOWN_WITHIN_MS, 'a repriced name stays, at its new price');
    // And back: a delisted name listed again returns.
    await put([listing(delisted)]);
    await waitFor(() => find(delisted), (h) => h !== undefined, SHOWN_WITHIN_MS, 'a name listed again shows again');
  });

  it("each candidate's cosines are its vectors' (its name's and its best word's, with the query and with the query's definitions), whichever search found it", async () => {
    const { dataSource } = getStack();
    // More keyword hits than the vector searches answer (50 and 20): some candidates' cosines are computed by the scorer, not handed on.
    const kinds = ['house', 'bar', 'shop', 'cup', 'bean', 'roast', 'mill', 'pot', 'lab', 'club'];
    await put(Array.from({ length: 70 }, (_, i) => listing(`zzsigcoffee${kinds[i % 10]}${Math.floor(i / 10) || ''}.com`)));
    const engine = new HybridSearch(dataSource, embedder, new EmbeddingCache());
    const index = await engine.load('live');
    const glossed = await glossedQuery(['coffee']);
    assert.ok(glossed, 'WordNet defines coffee');
    const [query, gloss] = await embedder.embed(['coffee', glossed]);
    const candidates = await engine.candidates('live', 'coffee');
    assert.ok(candidates.length > 50, `${candidates.length} candidates: the nearest names', the definitions', the keyword hits and the expansions'`);
    let checked = 0;
    for (const { entry, signals } of candidates) {
      const slot = index.slot(entry.name);
      if (slot === undefined || !index.hasVector(slot)) continue;
      const [own, ...words] = await embedder.embed([entryText(entry), ...entry.words]);
      const near = (got: number, want: number, what: string) => assert.ok(Math.abs(got - want) < 1e-4, `${entry.name} ${what}: ${got} against ${want}`);
      near(signals.name, dot(own, query), 'name');
      near(signals.glossName, dot(own, gloss), 'glossName');
      near(signals.word, Math.max(0, ...words.map((w) => dot(w, query))), 'word');
      near(signals.glossWord, Math.max(0, ...words.map((w) => dot(w, gloss))), 'glossWord');
      checked++;
    }
    assert.ok(checked > 50, `${checked} checked`);
  });

  it("the scorer reads a candidate's words by number as from its entry: the same signals, for labels of more than four words and for words whose numbers went to new words", async () => {
    const { dataSource } = getStack();
    /** The embedded engine with its words' numbers withheld: the scorer reads each entry's words. */
    class ByEntry extends HybridSearch {
      protected override async gather(environment: Environment, query: string, asName?: string): Promise<Gathered> {
        return { ...(await super.gather(environment, query, asName)), numbered: undefined };
      }
    }
    const numbered = new HybridSearch(dataSource, embedder, new EmbeddingCache());
    const byEntry = new ByEntry(dataSource, embedder, new EmbeddingCache());
    const same = async (q: string) => {
      const signals = async (engine: HybridSearch) => new Map((await engine.candidates('live', q)).map(({ entry, signals }) => [entry.name, signals]));
      const [ours, theirs] = [await signals(numbered), await signals(byEntry)];
      assert.deepEqual(ours, theirs, q);
      return ours;
    };
    await put(['zznumcoffeeshopinparisfrance', 'zznumespressobar', 'walrustuxedo', 'yakbanjo'].map((label) => listing(`${label}.com`)));
    const long = await same('coffee shop in paris');
    assert.ok(long.get('zznumcoffeeshopinparisfrance.com'), 'the label of seven words is a candidate');
    for (const q of ['espresso', 'walrus', 'tuxedo', 'yak']) assert.ok((await same(q)).size > 0, q);
    // walrus and tuxedo leave with their name; the next new words take their numbers (and not their rows).
    await put([listing('walrustuxedo.com', { status: 'unlisted' })]);
    await same('walrus');
    await put([listing('quokkazither.com')]);
    for (const q of ['quokka', 'zither', 'walrus', 'coffee', 'yak banjo']) await same(q);
    assert.ok((await same('zither')).get('quokkazither.com')!.word > 0.5, 'zither is scored by its own row');
  });
});

describe('search index: vector indexes', () => {
  const N = 300;
  let store: VectorStore;
  let vectors: Float32Array[];
  let tmp: string;

  before(() => {
    const random = seeded(20260501);
    store = new VectorStore();
    vectors = Array.from({ length: N }, () => unitVector(random));
    vectors.forEach((v, slot) => store.set(slot, v));
    tmp = mkdtempSync(path.join(os.tmpdir(), 'index-sync-'));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('VectorStore holds a vector per slot, far slots too, and dots a query with it', () => {
    const s = new VectorStore();
    const random = seeded(7);
    const first = unitVector(random);
    const far = unitVector(random);
    s.set(0, first);
    s.set(5000, far);
    // Kept as int16 rows (VectorRows): each component to the nearest 1/32,767, a cosine within 1e-4.
    assert.deepEqual(s.get(0), asKept(first));
    assert.deepEqual(s.get(5000), asKept(far));
    assert.ok(s.has(5000) && !s.has(4999) && !s.has(90_000));
    const query = s.query(far);
    assert.ok(Math.abs(s.dot(5000, query) - 1) < 1e-4);
    assert.ok(Math.abs(s.dot(0, query) - dot(first, far)) < 1e-4);
    assert.equal(s.dot(4999, query), 0, 'a slot without a vector');
    s.clear(0);
    assert.ok(!s.has(0));
  });

  it('ExactIndex: nearest best first, removed slots never returned, added slots found', () => {
    const index = new ExactIndex(store);
    for (let slot = 0; slot < N; slot++) index.add(slot);
    assert.equal(index.size, N);
    const query = vectors[17];
    const expected = byDot(vectors.keys(), (slot) => vectors[slot], query, 10);
    const got = index.nearest(query, 10);
    assert.equal(got[0], 17);
    assert.deepEqual(got, expected);
    const scores = got.map((s) => dot(vectors[s], query));
    assert.deepEqual(scores, [...scores].sort((x, y) => y - x));
    // Asked for, each answer's dot product by its vector's number (what the store's dot gives).
    const byRef = new Map<number, number>();
    assert.deepEqual(index.nearest(query, 10, undefined, byRef), expected);
    assert.equal(byRef.size, 10);
    for (const slot of got) assert.equal(byRef.get(store.refOf(slot)), store.dot(slot, store.query(query)));

    for (const slot of [17, 40, 41]) index.remove(slot);
    index.remove(17); // twice: the size counts it once
    assert.equal(index.size, N - 3);
    for (const q of [17, 40, 41]) {
      const all = index.nearest(vectors[q], N);
      assert.equal(all.length, N - 3);
      assert.ok(![17, 40, 41].some((s) => all.includes(s)), `removed slots absent when searching for ${q}`);
    }
    assert.deepEqual(index.nearest(query, 9), expected.slice(1));

    // A new slot past the end, and a freed slot taken by another vector.
    const random = seeded(99);
    const fresh = unitVector(random);
    const reused = unitVector(random);
    store.set(N + 500, fresh);
    index.add(N + 500);
    store.set(40, reused);
    index.add(40);
    assert.deepEqual(index.nearest(fresh, 1), [N + 500]);
    assert.deepEqual(index.nearest(reused, 1), [40]);
    store.set(40, vectors[40]);
  });

  it('ExactIndex over several blocks of rows: the same nearest as a brute force, across removes that move rows between blocks and empty the last block', () => {
    const random = seeded(31337);
    const many = new VectorStore();
    const M = 9_000; // three blocks of 4,096 rows
    const all = Array.from({ length: M }, () => unitVector(random));
    all.forEach((v, slot) => many.set(slot, v));
    const index = new ExactIndex(many);
    for (let slot = 0; slot < M; slot++) index.add(slot);
    const live = new Set(all.keys());
    const check = () => {
      for (const q of [0, 4_095, 4_096, 8_999].map((i) => all[i]).concat([unitVector(random)])) {
        const expected = byStoreDot(many, live, q, 20);
        assert.deepEqual(index.nearest(q, 20), expected);
      }
    };
    check();
    // Removes from the first blocks take the last rows; 900 of them empty the third block.
    for (let slot = 0; slot < 900; slot++) {
      index.remove(slot * 3);
      live.delete(slot * 3);
    }
    assert.equal(index.size, M - 900);
    check();
    // Added again: a new third block.
    for (let slot = 0; slot < 900; slot++) {
      index.add(slot * 3);
      live.add(slot * 3);
    }
    assert.equal(index.size, M);
    check();
  });

  it('ExactIndex scans int8 copies and scores its best again on the float vectors: in a tight cluster (one component past the int8 range in every row), where the int8 order alone is not the float order, the same nearest, in the same order, as a brute force over the vectors the store keeps', () => {
    const random = seeded(2718);
    const cluster = new VectorStore();
    const M = 2_000;
    const near = (): Float32Array => {
      // 0.9 on the first component (clamped in int8), the rest a few int8 steps apart, unit length:
      // names sharing most of their meaning (cosine ~0.9 between any two).
      const v = unitVector(random).map((x, i) => (i === 0 ? 0.9 : x * 0.3));
      const norm = Math.hypot(...v);
      return v.map((x) => x / norm);
    };
    const all = Array.from({ length: M }, near);
    all.forEach((v, slot) => cluster.set(slot, v));
    const index = new ExactIndex(cluster);
    for (let slot = 0; slot < M; slot++) index.add(slot);
    const rounded = all.map((v) => toInt8(v));
    let int8OrderDiffers = 0;
    for (const q of [all[3], all[1_999], near(), near(), unitVector(random)]) {
      // The truth: the store's own cosines (its int16 rows, as its kernels sum them), over all.
      const expected = byStoreDot(cluster, all.keys(), q);
      const q8 = toInt8(q);
      const byInt8 = byDot(all.keys(), (slot) => rounded[slot], q8);
      if (byInt8.slice(0, 50).join() !== expected.slice(0, 50).join()) int8OrderDiffers++;
      for (const k of [1, 5, 20, 50]) assert.deepEqual(index.nearest(q, k), expected.slice(0, k), `k ${k}`);
    }
    assert.ok(int8OrderDiffers >= 3, `the int8 order alone differs from the float order for ${int8OrderDiffers} of 5 queries`);
  });

  it('HnswIndex: written by the worker, mapped read-only and searched by a worker of its own; changes answered beside it; written again with them by the worker, and opened again; a closed one ends its worker after the searches under way', async () => {
    const random = seeded(4242);
    const file = path.join(tmp, 'nested', 'live-test.usearch');
    // The slots to write, each read with its vector (from `vectorOf`) and its name.
    const slotsOf = (slots: number[], vectorOf: (slot: number) => Float32Array) => ({ slots, count: slots.length, read: (slot: number) => ({ vector: vectorOf(slot), name: [`n${slot}.com`, `n ${slot}`] as [string, string] }) });
    const all = [...vectors.keys()];
    const built = await HnswIndex.write(file, { removed: [], ...slotsOf(all, (slot) => vectors[slot]) });
    assert.equal(built.size, N);
    assert.deepEqual([...built.members], Array.from({ length: N }, () => 1), 'the saved graph holds every slot');
    const index = await HnswIndex.open(built.graph, store, built.members);
    assert.equal(index.size, N);
    const sample = Array.from({ length: 40 }, (_, i) => (i * 7) % N);
    // An approximate index built on several threads over random vectors (no clusters, the hardest
    // case for a graph): its own vector is nearly always first, but a build under a loaded machine
    // has missed 4 in 40, so recall over the sample (90%), not each lookup, is asserted; the plumbing
    // below is checked exactly.
    const foundFirst = (await Promise.all(sample.map(async (i) => ((await index.nearest(vectors[i], 1))[0] === i ? [i] : [])))).flat();
    assert.ok(foundFirst.length >= sample.length * 0.9, `nearest to its own vector for ${foundFirst.length} of ${sample.length}`);
    // A slot the graph finds first for its own vector (the same search finds it after the removes below).
    const kept = foundFirst.find((i) => i !== 11 && i !== 12)!;

    // Removed: never returned, even when asking for everything.
    index.remove(11);
    index.remove(12);
    assert.equal(index.size, N - 2);
    for (const q of [11, 12, kept]) {
      const found = await index.nearest(vectors[q], N);
      assert.ok(!found.includes(11) && !found.includes(12), `removed slots absent when searching for ${q}`);
    }
    assert.deepEqual(await index.nearest(vectors[kept], 1), [kept]);
    const byRef = new Map<number, number>();
    const ten = await index.nearest(vectors[kept], 10, undefined, byRef);
    assert.equal(byRef.size, 10);
    for (const slot of ten) assert.equal(byRef.get(store.refOf(slot)), store.dot(slot, store.query(vectors[kept])), 'each answer\'s dot product, by its vector\'s number');

    // Added: a slot past the end, a removed slot taken again, an existing slot with a new vector.
    const fresh = unitVector(random);
    const reused = unitVector(random);
    const replaced = unitVector(random);
    store.set(1000, fresh);
    index.add(1000);
    store.set(11, reused);
    index.add(11);
    store.set(20, replaced);
    index.add(20);
    assert.equal(index.size, N);
    assert.deepEqual(await index.nearest(fresh, 1), [1000]);
    assert.deepEqual(await index.nearest(reused, 1), [11]);
    assert.deepEqual(await index.nearest(replaced, 1), [20]);
    assert.ok(!(await index.nearest(vectors[20], 5)).includes(20), 'the old vector of a replaced slot is not answered');
    assert.equal(index.changes, 4);

    // Written again by the worker: the saved graph with the changes applied, under a new file
    // that the names file names; the older graph is removed.
    const { removed, slots } = index.pendingChanges();
    assert.deepEqual([...slots].sort((x, y) => x - y), [11, 20, 1000]);
    const written = await HnswIndex.write(file, { base: index.file, keep: index.file, removed, ...slotsOf(slots, (slot) => store.get(slot)) });
    assert.equal(written.size, N);
    // The graph in use is kept (its worker may have to map it again: one that dies is restarted
    // over it); the names file names the new one.
    const graphs = readdirSync(path.dirname(file)).filter((f) => !f.includes('.names.json'));
    assert.deepEqual(graphs.sort(), [path.basename(index.file), path.basename(written.graph)].sort());
    assert.equal((JSON.parse(readFileSync(`${file}.names.json`, 'utf8')) as { graph: string }).graph, path.basename(written.graph));
    const nearFresh = await index.nearest(fresh, 3);
    await (index as unknown as { searcher: { worker: { terminate(): Promise<number> } } }).searcher.worker.terminate();
    assert.deepEqual(await index.nearest(fresh, 3), nearFresh, 'a dead worker is restarted over the graph in use after a save');
    rmSync(index.file);
    const loaded = await HnswIndex.load(file, store);
    assert.ok(loaded, 'the saved graph opens');
    assert.equal(loaded.index.size, index.size);
    assert.equal(loaded.index.changes, 0);
    const names: Array<[string, string] | null> = Array.from({ length: 1001 }, (_, slot) => (slot < N || slot === 1000 ? [`n${slot}.com`, `n ${slot}`] : null));
    names[12] = null;
    assert.deepEqual(loaded.names, names);
    const queries = [...sample.map((i) => vectors[i]), fresh, reused, replaced, unitVector(random), unitVector(random)];
    for (const q of queries) assert.deepEqual(await loaded.index.nearest(q, 5), await index.nearest(q, 5));
    assert.ok(!(await loaded.index.nearest(vectors[12], N)).includes(12), 'a slot removed before the save stays removed');
    assert.ok(!(await loaded.index.nearest(vectors[20], 5)).includes(20), 'a replaced vector stays replaced');
    store.set(11, vectors[11]);
    store.set(20, vectors[20]);

    // A search worker that dies is replaced by the next search.
    const expected = await loaded.index.nearest(queries[0], 5);
    await (loaded.index as unknown as { searcher: { worker: { terminate(): Promise<number> } } }).searcher.worker.terminate();
    assert.deepEqual(await loaded.index.nearest(queries[0], 5), expected);

    // Closed (another graph in use): the searches under way are answered, later ones fail.
    // A removed slot the graph holds is counted out of its size; one it does not hold (12, removed
    // before the save; 5000, never there) is not.
    const before = loaded.index.size;
    for (const slot of [5, 12, 5000]) loaded.index.remove(slot);
    assert.equal(loaded.index.size, before - 1);
    const underWay = Promise.all(queries.map((q) => loaded.index.nearest(q, 5)));
    loaded.index.close();
    assert.equal((await underWay).length, queries.length);
    await assert.rejects(loaded.index.nearest(queries[0], 5), /closed/);

    // The names file must describe this graph: a size that does not match means rebuild.
    const namesFile = `${file}.names.json`;
    const saved = JSON.parse(readFileSync(namesFile, 'utf8')) as { size: number; names: unknown[] };
    assert.equal(saved.size, index.size);
    writeFileSync(namesFile, JSON.stringify({ ...saved, size: saved.size + 1 }));
    assert.equal(await HnswIndex.load(file, store), undefined);
    writeFileSync(namesFile, '{"size": 3');
    assert.equal(await HnswIndex.load(file, store), undefined, 'a torn names file');
    rmSync(namesFile);
    assert.equal(await HnswIndex.load(file, store), undefined, 'no names file');
    index.close();
    assert.equal(await HnswIndex.load(path.join(tmp, 'missing.usearch'), store), undefined, 'no graph');
  });

  it('HnswIndex: a search looks as wide as its breadth asks, narrower than the default too', async function () {
    this.timeout(120_000);
    // Random vectors (no clusters: the hardest case for a graph), enough of them that a narrow
    // search misses some of the true nearest, which a wide one finds.
    const random = seeded(77);
    const count = 4_000;
    const own = new VectorStore();
    const all = Array.from({ length: count }, (_, slot) => slot);
    for (const slot of all) own.set(slot, unitVector(random));
    const written = await HnswIndex.write(path.join(tmp, 'breadth', 'live-test.usearch'), { removed: [], slots: all, count, read: (slot) => ({ vector: own.get(slot), name: [`b${slot}.com`, `b ${slot}`] }) });
    const index = await HnswIndex.open(written.graph, own, written.members);
    try {
      const queries = Array.from({ length: 40 }, () => unitVector(random));
      const recall = async (breadth: number) => {
        let found = 0;
        for (const q of queries) {
          const truth = new Set(byDot(all, (slot) => own.get(slot), q, 10));
          found += (await index.nearest(q, 10, breadth)).filter((slot) => truth.has(slot)).length;
        }
        return found / (10 * queries.length);
      };
      const [narrow, standard, wide] = [await recall(16), await recall(128), await recall(512)];
      assert.ok(wide >= 0.9, `breadth 512 finds ${wide} of the 10 nearest`);
      assert.ok(narrow < standard - 0.05 && standard <= wide, `recall@10 by breadth: 16 → ${narrow}, 128 → ${standard}, 512 → ${wide}`);
      // Searches asked together (a query's and its definitions') go to the worker in one message,
      // and each is answered as if asked alone, its breadth and scores its own.
      const asked = queries.slice(0, 3).map((query, i) => ({ query, k: 10, breadth: [16, 128, 64][i], scores: new Map<number, number>() }));
      const alone = await Promise.all(asked.map(({ query, k, breadth }) => index.nearest(query, k, breadth)));
      const post = Worker.prototype.postMessage;
      let messages = 0;
      Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
        messages++;
        return post.apply(this, args);
      };
      let together: number[][];
      try {
        together = await index.nearestEach(asked);
      } finally {
        Worker.prototype.postMessage = post;
      }
      assert.equal(messages, 1, 'one message for the three searches');
      assert.deepEqual(together, alone);
      for (const [i, { query, scores }] of asked.entries()) {
        assert.equal(scores.size, together[i].length);
        for (const slot of together[i]) assert.ok(Math.abs(scores.get(own.refOf(slot))! - dot(own.get(slot), query)) < 1e-3, `slot ${slot}'s score`);
      }
    } finally {
      index.close();
    }
  });
});

/**
 * InventoryIndex against a stand-in inventory and embedder, to control timing: the stand-in
 * answers every sync with all its rows (re-applying an unchanged row is harmless), and embeds a
 * text as a pseudo-random unit vector seeded by the text, optionally held back by a gate.
 */
describe('search index: embedding queue', () => {
  class FakeInventory {
    rows = new Map<string, { label: string; status: string; price: number }>();
    list(name: string, status = 'listed'): void {
      this.rows.set(name, { label: name.slice(0, name.indexOf('.')), status, price: 100_000 });
    }
    readonly dataSource = {
      // Hands its rows over a slice at a time, as pg does (it parses a result's rows as its socket
      // reads arrive), so that the stand-in's own work never holds the loop the index is judged on.
      query: async (_sql: string, params: unknown[]) => {
        const after = String(params[1]);
        const names = [...this.rows.keys()].filter((name) => name > after).sort();
        const rows = [];
        for (let i = 0; i < names.length; i += 1000) {
          await setImmediate();
          for (const name of names.slice(i, i + 1000)) {
            const r = this.rows.get(name)!;
            rows.push({ horizon: '1', name, label: r.label, category: 'general', status: r.status, buy_now_price_cents: String(r.price), currency: 'USD' });
          }
        }
        return rows.length ? rows : [{ horizon: '1', name: null, label: null, category: null, status: null, buy_now_price_cents: null, currency: null }];
      },
    } as unknown as DataSource;
  }


  // Tests of the sync and the embedding queue: the exact index throughout (20,001 names would
  // start a graph build, which has tests of its own).
  const make = (inventory: FakeInventory, embedder: FakeEmbedder) =>
    new InventoryIndex('live', inventory.dataSource, embedder as unknown as Embedder, new EmbeddingCache(), () => undefined, undefined, { annThreshold: 100_000 });

  it('a few new names have their vectors when refresh returns; a released slot is taken by the next new name', async () => {
    const inventory = new FakeInventory();
    inventory.list('alphaorchard.com');
    inventory.list('betaharbor.com');
    const index = make(inventory, new FakeEmbedder());
    await index.load();
    assert.equal(index.size, 2);
    const alpha = index.slot('alphaorchard.com')!;
    assert.deepEqual(index.nearest(FakeEmbedder.vector(entryText(index.slots[alpha]!)), 1), [alpha]);

    inventory.list('alphaorchard.com', 'sold');
    inventory.list('gammacanyon.com');
    await index.refresh();
    assert.equal(index.slot('alphaorchard.com'), undefined);
    const gamma = index.slot('gammacanyon.com')!;
    assert.equal(gamma, alpha, 'the freed slot is reused');
    assert.equal(index.pendingVectors, 0);
    assert.deepEqual(index.nearest(FakeEmbedder.vector(entryText(index.slots[gamma]!)), 1), [gamma]);
    assert.deepEqual(index.namesWith('alpha'), [], 'the sold name\'s words are gone from the postings');
    assert.ok(index.namesWith('gamma').includes(gamma));
  });

  it('namesWith finds a name by each of its words (past the first four too), never by a word it no longer holds, when the numbers of words that left are given to new ones', async () => {
    const inventory = new FakeInventory();
    inventory.list('bestcoffeeshopinparisfrance.com');
    inventory.list('alphaorchard.com');
    inventory.list('coffeecoffee.com');
    inventory.list('coffeebar.com');
    const index = make(inventory, new FakeEmbedder());
    await index.load();
    const long = index.slot('bestcoffeeshopinparisfrance.com')!;
    const words = index.slots[long]!.words;
    assert.ok(words.length > 4, `${words.join('|')}: more words than a slot's numbers hold`);
    const holders = (word: string) => index.namesWith(word).map((slot) => index.slots[slot]!.name).sort();
    for (const w of words.filter((w) => w !== 'coffee')) assert.deepEqual(holders(w), ['bestcoffeeshopinparisfrance.com'], w);
    assert.deepEqual(holders('coffee'), ['bestcoffeeshopinparisfrance.com', 'coffeebar.com', 'coffeecoffee.com']);
    // Words that no name holds any more give their numbers to the next new words.
    inventory.list('alphaorchard.com', 'sold');
    inventory.list('coffeecoffee.com', 'sold');
    await index.refresh();
    inventory.list('gammacanyon.com');
    inventory.list('deltariver.com');
    await index.refresh();
    for (const gone of ['alpha', 'orchard']) assert.deepEqual(holders(gone), [], gone);
    assert.deepEqual(holders('gamma'), ['gammacanyon.com']);
    assert.deepEqual(holders('river'), ['deltariver.com']);
    assert.deepEqual(holders('coffee'), ['bestcoffeeshopinparisfrance.com', 'coffeebar.com'], 'a word a sold label held twice is still held by the others');
    for (const w of words.filter((w) => w !== 'coffee')) assert.deepEqual(holders(w), ['bestcoffeeshopinparisfrance.com'], w);
    // The long name leaves and its slot goes to a new name: none of its words lists it.
    inventory.list('bestcoffeeshopinparisfrance.com', 'sold');
    await index.refresh();
    inventory.list('echoisland.com');
    await index.refresh();
    for (const w of words.filter((w) => w !== 'coffee')) assert.deepEqual(holders(w), [], w);
    assert.deepEqual(holders('coffee'), ['coffeebar.com']);
    assert.deepEqual(holders('island'), ['echoisland.com']);
  });

  it('names imported in bulk (more than a search waits for) are embedded in the background', async () => {
    const inventory = new FakeInventory();
    inventory.list('seedname.com');
    const index = make(inventory, new FakeEmbedder());
    await index.load();
    for (let i = 0; i < 300; i++) inventory.list(`bulkname${String(i).padStart(3, '0')}.com`);
    await index.refresh();
    assert.equal(index.size, 301);
    await waitFor(() => index.pendingVectors, (pending) => pending === 0, 3000, 'every name given its vector (the value read: how many still wait)');
    // And a name listed after the bulk import is embedded like any other.
    inventory.list('latecomer.com');
    await index.refresh();
    await waitFor(() => index.hasVector(index.slot('latecomer.com')!), (has) => has, 3000, 'a later name gets its vector');
  });

  it(`an import of 20,000 new names is applied in slices: the event loop turns at least ${TURNS_WHILE_APPLIED} times meanwhile (in one piece: none, for ~1.4 s)`, async function () {
    this.timeout(120_000);
    const inventory = new FakeInventory();
    inventory.list('seedname.com');
    const index = make(inventory, new FakeEmbedder());
    await index.load();
    const words = ['coffee', 'garden', 'cloud', 'pixel', 'harbor', 'summit', 'bright', 'urban', 'forest', 'silver', 'rocket', 'ocean', 'maple', 'stone', 'river', 'golden', 'swift', 'lunar', 'prime', 'noble', 'cedar', 'amber', 'atlas', 'nova', 'vivid', 'bold', 'quiet', 'happy', 'rapid', 'royal'];
    for (let i = 0; i < 20_000; i++) inventory.list(`${words[i % 30]}${words[Math.floor(i / 30) % 30]}${words[Math.floor(i / 900) % 30]}${i}.com`);
    const watch = loopWatch();
    try {
      await index.refresh();
    } finally {
      watch.stop();
    }
    // What is asserted is that the loop turned while the page was applied (in 10 ms slices: over a
    // hundred on this host), never how long a turn took. What the main thread ran between two
    // turns, besides garbage collections, is printed as a measurement (loopWatch).
    const { besidesGc } = watch.longestRan();
    assert.equal(index.size, 20_001);
    assert.ok(index.namesWith('harbor').length, 'the new names are searchable by their words');
    assert.ok(watch.turns() >= TURNS_WHILE_APPLIED, `the event loop turned ${watch.turns()} times while the page was applied`);
    console.log(`      (while 20,000 new names were applied: ${watch.turns()} turns of the loop; its longest run of the main thread without a turn ${besidesGc.toFixed(1)} ms; longest wait ${watch.longest().toFixed(1)} ms)`);
  });

  it('an HNSW graph is built off the event loop: the exact index answers meanwhile, the main thread runs under half of the process\'s CPU during the build (on the loop: all of it), changes made during the build are in the graph', async function () {
    this.timeout(240_000);
    // In a process of its own (test/search/isolated/graph-build-loop.ts): in the suite's process
    // the main thread also runs other tests' workflow activities, whose turns (up to 12-16 ms on
    // this machine) the loop watch would count as the index's.
    // Asynchronously, so that this process (the stack's API, worker and timers) keeps running meanwhile.
    const child = await promisify(execFile)(process.execPath, [require.resolve('mocha/bin/mocha.js'), '--no-config', '--timeout', '180000', '--enable-source-maps', path.join(__dirname, 'isolated', 'graph-build-loop.js')], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }).then(
      ({ stdout, stderr }) => ({ status: 0, stdout, stderr }),
      (err: { code: number; stdout: string; stderr: string }) => ({ status: err.code, stdout: err.stdout, stderr: err.stderr }),
    );
    const output = `${child.stdout}${child.stderr}`;
    assert.equal(child.status, 0, output);
    for (const line of output.split('\n').filter((l) => l.includes('(during the build:'))) console.log(line);
  });

  it('an import larger than a quarter of the saved HNSW graph has the graph written with it as a build (status building until it is in use), not left searched exactly beside a partial graph', async function () {
    this.timeout(180_000);
    const inventory = new FakeInventory();
    const label = (i: number) => {
      let s = '';
      for (let n = i + 26 * 26; n > 0; n = Math.floor(n / 26)) s += String.fromCharCode(97 + (n % 26));
      return `import${s}`;
    };
    const FIRST = 2_000;
    const IMPORTED = 12_000;
    for (let i = 0; i < FIRST; i++) inventory.list(`${label(i)}.com`);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'graph-import-'));
    const logs: string[] = [];
    // Whether the index says it is building when it starts the write (read as it logs it: the
    // write may be over before a poll would look).
    const buildingWhenWriting: boolean[] = [];
    const index: InventoryIndex = new InventoryIndex(
      'live',
      inventory.dataSource,
      new FakeEmbedder() as unknown as Embedder,
      new EmbeddingCache(),
      (m) => {
        logs.push(m);
        if (m.includes('lacks')) buildingWhenWriting.push(index.buildingGraph);
      },
      dir,
      { annThreshold: 1_000 },
    );
    try {
      await index.load();
      await index.graphBuilt();
      assert.equal(index.vectorIndexKind, 'hnsw', logs.join('\n'));
      const file = path.join(dir, graphFileName('live'));
      const before = await HnswIndex.load(file, new VectorStore());
      assert.equal(before?.index.size, FIRST);
      before!.index.close();

      // An import six times the graph's size.
      for (let i = FIRST; i < FIRST + IMPORTED; i++) inventory.list(`${label(i)}.com`);
      await index.refresh();
      await waitFor(() => logs.some((l) => l.includes('lacks')), (started) => started, 60_000, 'the graph written with the import (its log line)');
      assert.deepEqual(buildingWhenWriting, [true], 'reported as a build while it is written');
      await index.graphBuilt();
      assert.equal(index.buildingGraph, false);
      assert.equal(index.pendingVectors, 0);
      assert.equal(index.vectorIndexKind, 'hnsw');
      // Saved with the import, bar at most the last chunk embedded after the write began (those
      // are searched exactly until the next save): what a restart maps.
      const after = await HnswIndex.load(file, new VectorStore());
      assert.ok(after, 'the graph written with the import is saved');
      assert.ok(after.index.size >= FIRST + IMPORTED - 1_024, `${after.index.size} of ${FIRST + IMPORTED} names in the saved graph`);
      after.index.close();
      // And the imported names are found by their own vectors.
      const sample = Array.from({ length: 20 }, (_, i) => index.slot(`${label(FIRST + i * 599)}.com`)!);
      const found = (await Promise.all(sample.map(async (s) => (await index.nearest(FakeEmbedder.vector(entryText(index.slots[s]!)), 1))[0] === s))).filter(Boolean).length;
      assert.ok(found >= sample.length - 1, `nearest to its own vector for ${found} of ${sample.length}`);
    } finally {
      await index.save();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('SyncRunner (both engines): one run at a time; the calls during a run share the next, which starts after it whether it failed or not; settled waits for that next run too', async () => {
    const started: number[] = [];
    const gates: Array<() => void> = [];
    let failNext = true;
    const runner = new SyncRunner(async () => {
      started.push(started.length);
      await new Promise<void>((resolve) => gates.push(resolve));
      if (failNext) {
        failNext = false;
        throw new Error('the first run fails');
      }
    });
    const first = runner.run();
    await setImmediate();
    assert.equal(runner.current, first);
    // Waiting for the runs to settle, then two calls during the first run: one next run for both, after the first.
    let settled = false;
    void runner.settled().then(() => (settled = true));
    const second = runner.run();
    const third = runner.run();
    assert.equal(second, third);
    gates[0]();
    await assert.rejects(first, /the first run fails/);
    await setImmediate();
    assert.deepEqual(started, [0, 1], 'the next run started after the first failed');
    assert.equal(settled, false, 'settled waits for the run asked for during the first');
    gates[1]();
    await second;
    await setImmediate();
    assert.equal(settled, true);
    assert.equal(runner.current, undefined);
    assert.deepEqual(started, [0, 1], 'no run more than asked for');
  });

  it('a slot freed and taken by a new name while its old name was being embedded gets the new name\'s vector', async () => {
    const inventory = new FakeInventory();
    inventory.list('steadyname.com');
    const embedder = new FakeEmbedder();
    const index = make(inventory, embedder);
    await index.load();

    // A new name is being embedded (the embedder is held)…
    let release!: () => void;
    embedder.gate = new Promise<void>((r) => (release = r));
    const callsBefore = embedder.calls.length;
    inventory.list('firstcomer.com');
    const first = index.refresh();
    await waitFor(() => embedder.calls.length, (calls) => calls > callsBefore, 2000, 'the embedder is called');
    // …when it is sold and another name is listed, taking its slot.
    inventory.list('firstcomer.com', 'sold');
    inventory.list('secondcomer.com');
    const second = index.refresh();
    await waitFor(() => index.slot('secondcomer.com'), (slot) => slot !== undefined, 2000, 'the second name given a slot');
    assert.equal(index.slot('firstcomer.com'), undefined);
    release();
    embedder.gate = undefined;

    const outcomes = await Promise.allSettled([first, second]);
    assert.deepEqual(
      outcomes.map((o) => (o.status === 'rejected' ? `rejected: ${(o.reason as Error).message}` : o.status)),
      ['fulfilled', 'fulfilled'],
    );
    await index.refresh();
    const slot = index.slot('secondcomer.com')!;
    await waitFor(() => index.hasVector(slot), (has) => has, 2000, 'the second name given its vector');
    const mine = FakeEmbedder.vector(entryText(index.slots[slot]!));
    assert.ok(index.vectors.has(slot), 'the new name has a vector in the store');
    // (Kept as int16 rows: its own vector's cosine within 1e-3 of 1; another name's is far below.)
    assert.ok(Math.abs(dot(index.vectors.get(slot), mine) - 1) < 1e-3, 'and it is its own vector, not the old name\'s');
    assert.deepEqual(index.nearest(mine, 1), [slot]);
  });
});
