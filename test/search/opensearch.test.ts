import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { grade } from '../../bench/search-quality';
import { Domain } from '../../src/db/entities/domain';
import { importInventory, labelOf } from '../../src/discovery/inventory';
import { keywordScore, wordSimilarity } from '../../src/search/keyword-score';
import { DIMENSIONS, Embedder } from '../../src/search/embedder';
import { EmbeddingCache } from '../../src/search/embedding-cache';
import { cachedModelFiles } from '../../src/search/model-files';
import { aliasTarget, bulkWrite, ensureAlias, forceMerge, indexMapping, infixQuery, MappingWatch, openSearchClient, OpenSearchInventory, OpenSearchSearch, PUSHED_BACK_MS } from '../../src/search/opensearch/engine';
import { encodeVector, indexSettings, MAPPING_VERSION } from '../../src/search/opensearch/mapping';
import { segmentLabel } from '../../src/search/segment';
import { startSearchProcess, type SearchProcess } from '../../src/search/search-process';
import { adminWith } from '../helpers/admin';
import { liveListing } from '../helpers/search-data';
import { getStack, openSearchEngine, searchProcessEnv, testSearchDataDir } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

interface LabelledQuery {
  kind: string;
  q: string;
  split: string;
  terms: Record<string, number>;
}

/** `admin search` needs no Temporal (this file has no time-skipping server of its own). */
const NO_TEMPORAL = { TEMPORAL_ADDRESS: '127.0.0.1:1' };

const dcg = (grades: number[]) => grades.reduce((sum, g, i) => sum + (2 ** g - 1) / Math.log2(i + 2), 0);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function onMarket(environment: 'sandbox' | 'live'): Promise<string[]> {
  const rows = await getStack().dataSource.getRepository(Domain).createQueryBuilder('d').select('d.name', 'name').where('d.environment = :environment', { environment }).andWhere("d.status IN ('listed', 'reserved')").getRawMany<{ name: string }>();
  return rows.map((r) => r.name);
}

/** Until the OpenSearch engine holds as many names as are on the market (it follows a moment behind). */
async function caughtUp(environment: 'sandbox' | 'live'): Promise<void> {
  const { client } = await openSearchEngine();
  const counts = async () => {
    const [status, names] = await Promise.all([client.status(), onMarket(environment)]);
    return { index: status.environments[environment].names, inventory: names.length };
  };
  await waitFor(counts, (c) => c.index === c.inventory, 10_000, `the OpenSearch index holding as many ${environment} names as the inventory`);
}

/** Ends a test's own engine on an alias of its own: saved (its client closed), the index behind the alias deleted. */
async function dropScratch(search: OpenSearchSearch, url: string, alias: string): Promise<void> {
  const admin = openSearchClient(url);
  const index = await aliasTarget(admin, alias);
  await search.save();
  if (index) await admin.indices.delete({ index });
  await admin.close();
}

describe('search on OpenSearch: the same answers as the embedded engine', () => {
  before(async function () {
    this.timeout(5 * 60_000);
    await openSearchEngine();
  });

  it("word similarity computed in the application is pg_trgm's word_similarity (as good a run or better, the same for nearly all)", async () => {
    const labels = (await onMarket('sandbox')).map((n) => n.slice(0, n.indexOf('.'))).slice(0, 300);
    const words = ['coffee', 'cofee', 'mortgage', 'morgage', 'crypto', 'crytpo', 'bakery', 'law', 'shore', 'pizza', 'garden', 'solor'];
    const pairs = words.flatMap((w) => labels.map((l) => [w, l] as const));
    // Raw SQL: word_similarity is pg_trgm's, what the application's copy is checked against.
    const rows = (await getStack().dataSource.query(`SELECT w, l, word_similarity(w, l) AS s FROM unnest($1::text[], $2::text[]) AS t(w, l)`, [pairs.map((p) => p[0]), pairs.map((p) => p[1])])) as Array<{ w: string; l: string; s: number }>;
    let same = 0;
    for (const r of rows) {
      const ours = wordSimilarity(r.w, r.l);
      assert.ok(ours >= Number(r.s) - 1e-6, `${r.w} in ${r.l}: ${ours} < Postgres' ${r.s}`);
      if (Math.abs(ours - Number(r.s)) < 1e-4) same++;
    }
    assert.ok(same >= rows.length * 0.99, `${same} of ${rows.length} the same`);
    assert.equal(keywordScore('coffee', ['coffee'], false), 1);
    assert.equal(keywordScore('procoffee', ['coffee'], false), 0.8333);
    assert.equal(keywordScore('zebra', ['coffee'], false), undefined, 'no keyword hit');
    assert.equal(keywordScore('zebra', ['coffee'], true), 0.3, 'a topical match alone');
  });

  it("labels holding a word: the phrase of the word's trigrams finds every name `*word*` does, and more only across a hyphen", async () => {
    const { url } = await openSearchEngine();
    await caughtUp('sandbox');
    const client = openSearchClient(url);
    const labels = (await onMarket('sandbox')).map((n) => n.slice(0, n.indexOf('.')));
    // Pieces of labels (some across a hyphen once it is taken out), and words found nowhere.
    const words = new Set(['coffee', 'shop', 'tea', 'zzqx', '123', 'aaa']);
    labels.slice(0, 150).forEach((l, i) => {
      words.add(l.slice(i % 3, (i % 3) + 3 + (i % 5)));
      words.add(l.replace(/-/g, '').slice(1, 7));
    });
    const names = async (query: Record<string, unknown>) => {
      const response = await client.search({ index: 'partner-api-domains', body: { size: 10_000, _source: false, query: { bool: { filter: [{ term: { environment: 'sandbox' } }, query] } } } });
      return (response.body as { hits: { hits: Array<{ _id: string }> } }).hits.hits.map((h) => h._id);
    };
    const label = (id: string) => labelOf(id.slice(id.indexOf(':') + 1));
    let found = 0;
    for (const w of [...words].filter((x) => /^[a-z0-9]{3,}$/.test(x))) {
      assert.ok('constant_score' in infixQuery(w), w);
      const byPhrase = new Set(await names(infixQuery(w)));
      const byWildcard = await names({ wildcard: { 'label.infix': { value: `*${w}*` } } });
      for (const id of byWildcard) assert.ok(byPhrase.has(id), `${w}: ${id}`);
      // Any more: two of the label's runs joined across a hyphen (bio-ionic for bionic).
      for (const id of byPhrase) if (!byWildcard.includes(id)) assert.ok(label(id).includes('-') && !label(id).includes(w), `${w}: ${id}`);
      if (byWildcard.length) found++;
    }
    assert.ok(found >= 100, `${found} words found in some label`);
    // Such a label (in an index of its own): the phrase finds it, the wildcard does not.
    const scratch = `infix-check-${Date.now()}`;
    await client.indices.create({ index: scratch, body: indexSettings() });
    try {
      await bulkWrite(client, [[{ index: { _index: scratch, _id: 'sandbox:bio-ionic.com' } }, { environment: 'sandbox', name: 'bio-ionic.com', label: 'bio-ionic', text: 'bio ionic', words: ['bio', 'ionic'], document: 'bio-ionic', available: true, buy_now_price_cents: 100, currency: 'USD' }]]);
      await client.indices.refresh({ index: scratch });
      const count = async (query: Record<string, unknown>) => ((await client.count({ index: scratch, body: { query } })).body as { count: number }).count;
      assert.equal(await count(infixQuery('bionic')), 1);
      assert.equal(await count({ wildcard: { 'label.infix': { value: '*bionic*' } } }), 0);
    } finally {
      await client.indices.delete({ index: scratch });
    }
    await client.close();
  });

  it('the labelled queries give the same nDCG@5 per kind on both engines (within 0.01)', async function () {
    this.timeout(5 * 60_000);
    await caughtUp('sandbox');
    const { client: opensearch } = await openSearchEngine();
    const embedded = getStack().appDeps.search;
    const queries = (JSON.parse(readFileSync(path.join(getStack().config.projectRoot, 'data', 'search-queries.json'), 'utf8')) as { queries: LabelledQuery[] }).queries;
    const names = await onMarket('sandbox');
    const byKind = new Map<string, { embedded: number[]; opensearch: number[] }>();
    for (const query of queries) {
      const ideal = dcg(names.map((n) => grade(n, query)).sort((a, b) => b - a).slice(0, 5));
      const ndcg = async (engine: typeof embedded) => (ideal ? dcg((await engine.search('sandbox', query.q, 5)).map((h) => grade(h.name, query))) / ideal : 0);
      const kind = byKind.get(query.kind) ?? { embedded: [], opensearch: [] };
      kind.embedded.push(await ndcg(embedded));
      kind.opensearch.push(await ndcg(opensearch));
      byKind.set(query.kind, kind);
    }
    const table = [...byKind].map(([kind, v]) => ({ kind, queries: v.embedded.length, embedded: +mean(v.embedded).toFixed(4), opensearch: +mean(v.opensearch).toFixed(4) }));
    console.log(table.map((r) => `      ${r.kind.padEnd(8)} ${r.queries} queries  embedded ${r.embedded.toFixed(3)}  opensearch ${r.opensearch.toFixed(3)}`).join('\n'));
    for (const r of table) assert.ok(Math.abs(r.embedded - r.opensearch) <= 0.01, JSON.stringify(r));
  });

  it('a name whose price or availability changes keeps its vector: the k-NN search still finds it by meaning', async () => {
    const { url } = await openSearchEngine();
    const domains = getStack().dataSource.getRepository(Domain);
    // A name of the live inventory of its own (other files' sandbox names are sold and bought).
    const name = 'liveknnkeeps-espresso.net';
    await importInventory(getStack().dataSource, 'live', [{ name, category: 'food-and-drink', buy_now_price_cents: 300000, floor_price_cents: 200000, currency: 'USD', status: 'listed', active_site: false, registered_year: 2015 }]);
    const doc = async () => (await (await fetch(`${url}/partner-api-domains/_doc/${encodeURIComponent(`live:${name}`)}`)).json()) as { found: boolean; _source?: { buy_now_price_cents: number; available: boolean; vector_b64: string } };
    const indexed = await waitFor(doc, (d) => d.found, 5_000, 'the name in the index');
    await domains.update({ environment: 'live', name }, { buyNowPriceCents: 310000 });
    await waitFor(doc, (d) => d._source?.buy_now_price_cents === 310000, 5_000, 'the new price in the index');
    await domains.update({ environment: 'live', name }, { status: 'reserved' });
    await waitFor(doc, (d) => d._source?.available === false, 5_000, 'the reservation in the index');
    const vector = Array.from(new Float32Array(new Uint8Array(Buffer.from(indexed._source!.vector_b64, 'base64')).buffer));
    const found = (await (await fetch(`${url}/partner-api-domains/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ size: 3, _source: ['name'], query: { knn: { vector: { vector, k: 3, filter: { term: { environment: 'live' } } } } } }),
    })).json()) as { hits: { hits: Array<{ _source: { name: string } }> } };
    assert.equal(found.hits.hits[0]?._source.name, name, JSON.stringify(found.hits.hits));
    await domains.update({ environment: 'live', name }, { status: 'sold' });
  });

  it('one indexer among the search processes on an index: the other reads what it writes (a new name within a second, the count and vocabulary after it), and takes over when the indexer is killed', async function () {
    this.timeout(5 * 60_000);
    const { url } = await openSearchEngine();
    const { config, databaseUrl, dataSource } = getStack();
    // An alias of its own, so that this file's other tests keep theirs.
    const alias = `indexer-test-${Date.now()}`;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'indexer-test-'));
    const lines: string[] = [];
    const start = (socket: string) =>
      startSearchProcess({
        env: searchProcessEnv(config, databaseUrl, `unix:${path.join(dir, socket)}`, testSearchDataDir(config), { SEARCH_ENGINE: 'opensearch', OPENSEARCH_URL: url, OPENSEARCH_INDEX: alias, LOG_LEVEL: 'info' }),
        output: (line) => lines.push(`${socket}: ${line}`),
      });
    const processes: SearchProcess[] = [];
    const names = ['indexerfirstcroissant.com', 'indexertakeovercroissant.com'];
    try {
      const a = await start('a.sock');
      processes.push(a);
      const b = await start('b.sock');
      processes.push(b);
      const [statusA, statusB] = [await a.client.status(), await b.client.status()];
      assert.equal(statusA.environments.live.indexer, true, 'the first process indexes');
      assert.equal(statusB.environments.live.indexer, false, 'the second reads the index');
      assert.equal(statusB.environments.live.names, statusA.environments.live.names);
      assert.ok(lines.some((l) => l.startsWith('a.sock') && /is the indexer/.test(l)), lines.join('\n'));
      assert.ok(!lines.some((l) => l.startsWith('b.sock') && /is the indexer/.test(l)), 'the second never indexed');

      // A name listed: the reader finds it as soon as the indexer has written it, and counts it once it reads the vocabulary again.
      await importInventory(dataSource, 'live', [liveListing(names[0])]);
      await waitFor(() => b.client.search('live', 'indexerfirstcroissant', 5), (hits) => hits[0]?.name === names[0], 1_000, 'the reader finds the name the indexer wrote');
      const before = statusB.environments.live.names;
      await waitFor(async () => (await b.client.status()).environments.live.names, (n) => n === before + 1, 15_000, "the reader's count follows the index");

      // The indexer dies (no shutdown: its lock's connection just goes): the reader takes over and keeps the index up.
      process.kill(a.pid, 'SIGKILL');
      await waitFor(async () => (await b.client.status()).environments.live.indexer, (indexer) => indexer === true, 10_000, 'the reader takes the indexer lock');
      await importInventory(dataSource, 'live', [liveListing(names[1])]);
      await waitFor(() => b.client.search('live', 'indexertakeovercroissant', 5), (hits) => hits[0]?.name === names[1], 1_000, 'the new indexer writes a new name');
    } catch (err) {
      process.stderr.write(lines.join('\n') + '\n');
      throw err;
    } finally {
      await Promise.all(processes.map((p) => p.stop().catch(() => undefined)));
      for (const name of names) await dataSource.getRepository(Domain).update({ environment: 'live', name }, { status: 'sold' });
      const client = openSearchClient(url);
      const index = await aliasTarget(client, alias);
      if (index) await client.indices.delete({ index });
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a first indexing takes the vectors the embedded engine made on this host from its log (names, words), and embeds only what it lacks", async function () {
    this.timeout(5 * 60_000);
    const { url } = await openSearchEngine();
    const { config, dataSource } = getStack();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'seeded-index-'));
    const alias = `seeded-test-${Date.now()}`;
    // A name of two words or more (single words are embedded anyway, as the vocabulary's words).
    const named = await Promise.all((await onMarket('sandbox')).sort().slice(0, 50).map(async (n) => ({ name: n, text: await segmentLabel(n.slice(0, n.indexOf('.'))) })));
    const { name, text } = named.find((n) => n.text.includes(' '))!;
    // A vector the model would never give the text: the index can only have it from the log.
    const planted = Float32Array.from({ length: DIMENSIONS }, (_, i) => (i === 7 ? 1 : 0));
    const word = text.split(' ')[0];
    const plantedWord = Float32Array.from({ length: DIMENSIONS }, (_, i) => (i === 9 ? 1 : 0));
    const log = new EmbeddingCache(path.join(dir, 'sandbox.log'));
    log.set(text, planted);
    log.set(word, plantedWord);
    log.save();
    const words = new EmbeddingCache();
    const model = await Embedder.load(cachedModelFiles(config.toolCacheDir)!);
    const asked: string[] = [];
    const embedder = Object.assign(Object.create(model) as Embedder, {
      embedAll: (texts: string[]) => (asked.push(...texts), model.embedAll(texts)),
    });
    const lines: string[] = [];
    const client = openSearchClient(url);
    const search = new OpenSearchSearch(dataSource, embedder, client, alias, words, (m) => lines.push(m), {}, (environment) => path.join(dir, `${environment}.log`));
    try {
      await search.load('sandbox');
      const doc = (await (await fetch(`${url}/${alias}/_doc/${encodeURIComponent(`sandbox:${name}`)}`)).json()) as { _source: { vector_b64: string } };
      assert.equal(doc._source.vector_b64, encodeVector(planted), 'the vector from the log');
      assert.ok(!asked.includes(text), 'the name in the log is not embedded again');
      assert.deepEqual(words.get(word), plantedWord, "a word's vector from the log too");
      assert.ok(!asked.includes(word), 'the word in the log is not embedded again');
      assert.ok(asked.length > 0, 'the names the log lacks are embedded');
      // Read once for the names and the words: one scan of a million texts takes ~8.5 s.
      assert.deepEqual(lines.filter((l) => /vectors taken from the embedded engine's log/.test(l)), [`sandbox: 2 vectors taken from the embedded engine's log (sandbox.log)`], lines.join('\n'));
    } finally {
      await dropScratch(search, url, alias);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a first indexing cut short (its last writes never refreshed) is found at the next start and done again: a name that left the market meanwhile goes', async function () {
    this.timeout(5 * 60_000);
    const { url } = await openSearchEngine();
    const { config, dataSource } = getStack();
    const alias = `unfinished-test-${Date.now()}`;
    const client = openSearchClient(url);
    await ensureAlias(client, alias);
    const [listed] = (await onMarket('sandbox')).sort();
    // What a process killed mid-way leaves: documents, no horizon, nothing refreshed.
    await bulkWrite(client, [
      [{ index: { _index: alias, _id: 'sandbox:left-the-market.com' } }, { environment: 'sandbox', name: 'left-the-market.com', label: 'left-the-market' }],
      [{ index: { _index: alias, _id: `sandbox:${listed}` } }, { environment: 'sandbox', name: listed, label: listed.slice(0, listed.indexOf('.')) }],
    ]);
    const embeddings = path.join(testSearchDataDir(config), 'embeddings');
    const seed = readdirSync(embeddings).find((f) => f.startsWith('sandbox-') && f.endsWith('.log'));
    const lines: string[] = [];
    const model = await Embedder.load(cachedModelFiles(config.toolCacheDir)!);
    assert.ok(seed, 'the embedded engine has its log');
    const search = new OpenSearchSearch(dataSource, model, client, alias, new EmbeddingCache(), (m) => lines.push(m), {}, () => path.join(embeddings, seed));
    try {
      await search.load('sandbox');
      assert.ok(lines.includes('sandbox: an unfinished first indexing of 2 names found: indexing again'), lines.join('\n'));
      const doc = (await (await fetch(`${url}/${alias}/_doc/${encodeURIComponent('sandbox:left-the-market.com')}`)).json()) as { found: boolean };
      assert.equal(doc.found, false, 'the name that left the market is gone');
      const count = ((await client.count({ index: alias, body: { query: { term: { environment: 'sandbox' } } } })).body as { count: number }).count;
      assert.equal(count, (await onMarket('sandbox')).length);
      assert.equal(search.status('sandbox').names, count, 'counted once each');
    } finally {
      await dropScratch(search, url, alias);
    }
  });

  it('admin search reindex builds a new index and moves the alias while searches go on: none fails, the answers stay the same', async function () {
    this.timeout(5 * 60_000);
    await caughtUp('sandbox');
    const { client, url, lines } = await openSearchEngine();
    const before = await client.search('sandbox', 'coffee shop');
    const aliases = async () => (await (await fetch(`${url}/_cat/aliases/partner-api-domains?format=json`)).json()) as Array<{ index: string }>;
    const [{ index: previous }] = await aliases();
    let searching = true;
    let searches = 0;
    const failures: string[] = [];
    const load = (async () => {
      while (searching) {
        try {
          const hits = await client.search('sandbox', 'coffee shop');
          if (JSON.stringify(hits) !== JSON.stringify(before)) failures.push(`different answer: ${JSON.stringify(hits)}`);
        } catch (err) {
          failures.push((err as Error).message);
        }
        searches++;
      }
    })();
    const done = await adminWith({ SEARCH_URL: client.url, ...NO_TEMPORAL }, 'search', 'reindex', '--json');
    searching = false;
    await load;
    assert.equal(done.code, 0, done.stderr);
    const report = JSON.parse(done.stdout) as { index: string; previous: string; names: Record<string, number> };
    assert.equal(report.previous, previous);
    assert.equal(report.names.sandbox, (await onMarket('sandbox')).length);
    const [{ index: now }] = await aliases();
    assert.equal(now, report.index);
    assert.equal((await fetch(`${url}/${previous}`)).status, 404, 'the old index is dropped');
    // Merged before the move: one segment of the loaded names, and one for each catch-up's writes (before and after the move) at most.
    const segments = (await (await fetch(`${url}/_cat/segments/${now}?format=json`)).json()) as Array<{ 'docs.count': string }>;
    assert.ok(segments.length <= 3, `${segments.length} segments`);
    assert.ok(Math.max(...segments.map((x) => Number(x['docs.count']))) >= report.names.sandbox, JSON.stringify(segments));
    assert.ok(lines.some((l) => l.includes(`${now}: segments merged into 1 a shard`)), lines.join('\n'));
    assert.ok(searches > 5, `${searches} searches during the reindex`);
    assert.deepEqual(failures, []);
    assert.deepEqual(await client.search('sandbox', 'coffee shop'), before);
  });

  it("an index's mapping version is read from the index: another version than this code's gets the notice the search process logs, naming the reindex; the suite's engine reports its own in its status", async () => {
    const { url, client: search } = await openSearchEngine();
    const client = openSearchClient(url);
    const alias = `old-mapping-test-${Date.now()}`;
    const index = `${alias}-v1-0`;
    const settings = indexSettings({}) as { mappings: Record<string, unknown> };
    await client.indices.create({ index, body: { ...settings, mappings: { ...settings.mappings, _meta: { mapping_version: 1 } }, aliases: { [alias]: {} } } });
    try {
      const old = await indexMapping(client, alias, index);
      assert.equal(old.version, 1);
      assert.match(old.notice ?? '', new RegExp(`${alias} points at ${index}, an index of mapping version 1, and this code's is ${MAPPING_VERSION}: it is searched meanwhile; \`npm run admin -- search reindex\` builds an index of this version`));
      // The suite's index is of this code's version: nothing to say.
      const current = (await aliasTarget(client, 'partner-api-domains'))!;
      assert.deepEqual(await indexMapping(client, 'partner-api-domains', current), { version: MAPPING_VERSION });
      const status = (await search.status()).environments.sandbox;
      assert.deepEqual([status.mappingVersion, status.expectedMappingVersion], [MAPPING_VERSION, MAPPING_VERSION]);
    } finally {
      await client.indices.delete({ index });
      await client.close();
    }
  });

  it("a loaded engine reads its alias's mapping version again: another process's reindex shows within its next check, the log saying so once per move", async () => {
    const { url } = await openSearchEngine();
    const client = openSearchClient(url);
    const alias = `watched-mapping-test-${Date.now()}`;
    const settings = indexSettings({}) as { mappings: Record<string, unknown> };
    const old = `${alias}-v1-0`;
    const current = `${alias}-v${MAPPING_VERSION}-1`;
    await client.indices.create({ index: old, body: { ...settings, mappings: { ...settings.mappings, _meta: { mapping_version: 1 } }, aliases: { [alias]: {} } } });
    await client.indices.create({ index: current, body: settings });
    const logged: string[] = [];
    const watch = new MappingWatch(client, alias, (m) => logged.push(m));
    let stop: (() => void) | undefined;
    try {
      assert.equal(watch.version, undefined, 'not read yet');
      await watch.check();
      await watch.check();
      assert.equal(watch.version, 1);
      assert.equal(logged.length, 1, logged.join('\n'));
      assert.match(logged[0], /an index of mapping version 1, and this code's is .*search reindex/);
      // Another process moves the alias: the next check sees it.
      await client.indices.updateAliases({ body: { actions: [{ remove: { index: old, alias } }, { add: { index: current, alias } }] } });
      await watch.check();
      assert.equal(watch.version, MAPPING_VERSION);
      assert.deepEqual(logged.slice(1), [`${alias} now points at ${current}, of mapping version ${MAPPING_VERSION}`]);
      // Checked on a timer too (the engine's is a minute): moved back, seen without a call.
      stop = watch.every(100);
      assert.ok(watch.watching);
      await client.indices.updateAliases({ body: { actions: [{ remove: { index: current, alias } }, { add: { index: old, alias } }] } });
      await waitFor(() => watch.version, (version) => version === 1, 5_000, 'the timer seeing the alias moved back');
      assert.equal(watch.version, 1);
      stop();
      assert.ok(!watch.watching);
      assert.equal(logged.filter((m) => m.includes(`now points at ${old}`)).length, 1, logged.join('\n'));
      // An alias gone (its index deleted) changes nothing and says nothing more.
      const said = logged.length;
      await client.indices.delete({ index: [old, current] });
      await watch.check();
      assert.equal(watch.version, 1);
      assert.equal(logged.length, said);
    } finally {
      stop?.();
      await client.indices.delete({ index: [old, current] }, { ignore: [404] });
      await client.close();
    }
  });

  it('writes in bulk requests of 400 operations, two at a time, and sends again what the cluster pushed back (429) after a wait rather than failing', async () => {
    const { url } = await openSearchEngine();
    const real = openSearchClient(url);
    const index = `bulk-test-${Date.now()}`;
    await real.indices.create({ index, body: { settings: { number_of_shards: 1, number_of_replicas: 0 } } });
    try {
      const sizes: number[] = [];
      let pushBack = 1;
      // Whether the refused request was sent again only after the code's first back-off: a timer
      // set, before the write, to fire just before that back-off ends has fired by then (timers
      // fire in the order they fall due: an order of events, not a measure of elapsed time).
      let backOffPassed = false;
      let refusedBody: unknown;
      let resentAfterBackOff: boolean | undefined;
      let inFlight = 0;
      let mostInFlight = 0;
      // The cluster itself answers; the first request is refused as a tripped memory breaker answers it.
      const client = new Proxy(real, {
        get: (target, key) =>
          key === 'bulk'
            ? async (params: { body: unknown[] }) => {
                sizes.push(params.body.length);
                if (refusedBody !== undefined && params.body[1] === refusedBody) resentAfterBackOff = backOffPassed;
                if (pushBack-- > 0) {
                  refusedBody = params.body[1];
                  throw Object.assign(new Error('circuit_breaking_exception'), { statusCode: 429 });
                }
                mostInFlight = Math.max(mostInFlight, ++inFlight);
                try {
                  return await target.bulk(params as Parameters<typeof target.bulk>[0]);
                } finally {
                  inFlight--;
                }
              }
            : Reflect.get(target, key),
      });
      const operations = Array.from({ length: 900 }, (_, i) => [{ index: { _index: index, _id: `n${i}` } }, { n: i }]);
      setTimeout(() => (backOffPassed = true), PUSHED_BACK_MS[0]! - 1);
      const items = await bulkWrite(client, operations);
      await real.indices.refresh({ index });
      assert.equal(items.length, 900, 'one item per operation');
      assert.deepEqual([...sizes].sort((a, b) => a - b), [200, 800, 800, 800], 'in 400s, the first request sent again');
      assert.equal(sizes[0], 800);
      assert.equal(resentAfterBackOff, true, 'sent again after the first back-off');
      assert.equal(((await real.count({ index })).body as { count: number }).count, 900);
      // Two under way at once.
      mostInFlight = 0;
      await bulkWrite(client, operations.map(([action, doc], i) => [{ index: { ...(action as { index: object }).index, _id: `m${i}` } }, doc]));
      assert.equal(mostInFlight, 2);
      // Anything but a push-back fails at once.
      pushBack = 0;
      const refused = new Proxy(real, { get: (target, key) => (key === 'bulk' ? async () => Promise.reject(Object.assign(new Error('mapper_parsing_exception'), { statusCode: 400 })) : Reflect.get(target, key)) });
      await assert.rejects(bulkWrite(refused, operations.slice(0, 1)), /mapper_parsing_exception/);
    } finally {
      await real.indices.delete({ index });
      await real.close();
    }
  });

  it("an index refreshes only when asked (mapping version 3), and a bulk-loaded one's segments are merged into one a shard; the suite's first indexing merged its own", async () => {
    const { url, lines } = await openSearchEngine();
    const client = openSearchClient(url);
    const index = `merge-test-${Date.now()}`;
    await client.indices.create({ index, body: indexSettings({}) });
    try {
      const segments = async () => ((await (await fetch(`${url}/_cat/segments/${index}?format=json`)).json()) as unknown[]).length;
      const count = async () => ((await client.count({ index })).body as { count: number }).count;
      for (let batch = 0; batch < 3; batch++) {
        await bulkWrite(client, Array.from({ length: 50 }, (_, i) => [{ index: { _index: index, _id: `n${batch}-${i}` } }, { environment: 'sandbox', name: `n${batch}-${i}.com` }]));
        if (batch === 0) {
          // A deliberate pause to show that nothing happens: twice OpenSearch's default refresh
          // interval (1 s), after which an index that refreshed by itself would show the batch.
          const twoDefaultRefreshesMs = 2_000;
          await new Promise((resolve) => setTimeout(resolve, twoDefaultRefreshesMs));
          assert.equal(await count(), 0, 'not searched before a refresh');
        }
        await client.indices.refresh({ index });
      }
      assert.equal(await count(), 150);
      assert.equal(await segments(), 3, 'a segment a refresh');
      const logged: string[] = [];
      await forceMerge(client, index, (m) => logged.push(m));
      assert.equal(await segments(), 1);
      assert.equal(await count(), 150);
      assert.match(logged.join('\n'), new RegExp(`${index}: segments merged into 1 a shard`));
      // The suite's engine merges after its first indexing, in the background.
      await waitFor(() => lines.find((l) => /partner-api-domains: segments merged into 1 a shard/.test(l)), (line) => line !== undefined, 30_000, "the suite's engine logging its merge");
      assert.ok(lines.some((l) => /partner-api-domains: segments merged into 1 a shard/.test(l)), 'the first indexing merged');
    } finally {
      await client.indices.delete({ index });
      await client.close();
    }
  });

  it("an indexing look-up the cluster pushes back (its memory breaker tripped) is sent again after a wait: the page is written, the search process goes on", async () => {
    const { url } = await openSearchEngine();
    const real = openSearchClient(url);
    const index = `pushback-test-${Date.now()}`;
    await real.indices.create({ index, body: indexSettings({}) });
    try {
      let pushBack = 1;
      let lookUps = 0;
      // The cluster itself answers; the first look-up is refused as the tripped breaker of 2026-11-28 refused it.
      const client = new Proxy(real, {
        get: (target, key) =>
          key === 'mget'
            ? async (params: Parameters<typeof target.mget>[0]) => {
                lookUps++;
                if (pushBack-- > 0) throw Object.assign(new Error('circuit_breaking_exception: [parent] Data too large'), { statusCode: 429 });
                return target.mget(params);
              }
            : Reflect.get(target, key),
      });
      const model = await Embedder.load(cachedModelFiles(getStack().config.toolCacheDir)!);
      const inventory = new OpenSearchInventory('sandbox', getStack().dataSource, client, index, model, () => undefined);
      const vector = Float32Array.from({ length: DIMENSIONS }, (_, i) => (i === 3 ? 1 : 0));
      const row = { name: 'pushedback.com', label: 'pushedback', category: 'technology', status: 'listed', buy_now_price_cents: '120000', currency: 'USD' };
      await inventory.write(index, [row], new Map([[row.name, encodeVector(vector)]]));
      assert.equal(lookUps, 2, 'the look-up sent again');
      const doc = (await (await fetch(`${url}/${index}/_doc/${encodeURIComponent('sandbox:pushedback.com')}`)).json()) as { found: boolean; _source: { vector_b64: string } };
      assert.ok(doc.found, 'the page written');
      assert.equal(doc._source.vector_b64, encodeVector(vector));
    } finally {
      await real.indices.delete({ index });
      await real.close();
    }
  });

  it('the embedded engine answers reindex with a clear refusal', async () => {
    const done = await adminWith({ SEARCH_URL: getStack().searchProcess.url, ...NO_TEMPORAL }, 'search', 'reindex');
    assert.notEqual(done.code, 0);
    assert.match(done.stderr, /409.*reindex is for SEARCH_ENGINE=opensearch/);
  });
});
