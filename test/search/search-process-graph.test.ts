/**
 * The search process's own event loop while it saves its HNSW graph after 10,000 changes and
 * opens the graph it saved: the build worker saves it and a search worker maps it, so the loop
 * keeps answering. Over a saved graph of 30,000 names it opens at start, the test asks the search
 * process for /status one request after another while names are added and the graph saved, and
 * counts the answers that say the save is under way (writing the graph, then opening it): a
 * write run on the event loop would answer none of them until it was done. What it asserts is where the
 * work runs, never how fast: the longest its main thread ran during one /status (from Linux's
 * schedstat, less its garbage collection) is printed, as a measurement, not a bound.
 * (Building a graph and opening it in a running index: test/search/index-sync.test.ts.)
 *
 * The names live in a database of the test's own (scratchDatabase): in the suite's, the stack's
 * search processes would embed or index all 40,000 of them in the background.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createApp } from '../../src/api/app';
import { importInventory } from '../../src/discovery/inventory';
import { DIMENSIONS } from '../../src/search/embedder';
import { createHnsw } from '../../src/search/hnsw';
import { graphFileName } from '../../src/search/inventory-index';
import { startSearchProcess, type SearchProcess } from '../../src/search/search-process';
import { liveListing, searchDataWithStandInVectors } from '../helpers/search-data';
import { Domain } from '../../src/db/entities/domain';
import { In } from 'typeorm';
import { getStack, listen, newPartner, scratchDatabase, searchProcessEnv } from '../helpers/stack';

/**
 * Large enough that saving and opening its graph takes many turns of a /status loop (a save of
 * 80,000 names held a loop ~100 ms when it ran there), small enough to build in seconds.
 */
const N = 30_000;
/** The search process writes its graph again after this many changes (SAVE_AFTER_CHANGES). */
const CHANGES = 10_050;
/** /status answers that said the save was under way, at least: the loop turned throughout it. */
const TURNS_WHILE_SAVING = 3;

describe('an HNSW graph saved and opened in the search process', () => {
  const WORDS = 'amber apple arrow atlas basil beacon berry birch bloom breeze brook cactus canyon cedar cherry cider cliff clover cobalt comet coral cotton crane crystal daisy delta dune eagle echo ember fable falcon fern flint forest garden ginger granite harbor hazel heron honey island ivory jade kettle lagoon lantern maple meadow'.split(' ');
  const names: string[] = [];
  for (const a of WORDS) for (const b of WORDS) for (const c of WORDS) if (a !== b && b !== c && names.length < N + CHANGES) names.push(`zzg${a}${b}${c}.com`);
  const first = names.slice(0, N);
  const changes = names.slice(N);
  let tmp: string | undefined;
  let searchProcess: SearchProcess | undefined;
  let onMarket = 0;
  let db: Awaited<ReturnType<typeof scratchDatabase>> | undefined;
  const lines: string[] = [];

  before(async function () {
    this.timeout(600_000);
    assert.equal(changes.length, CHANGES);
    const { config } = getStack();
    db = await scratchDatabase('graph');
    await importInventory(db.dataSource, 'live', first.map(liveListing));
    // The graph of the first N names, saved as the search process saves it (slot i: names[i]),
    // so that it opens it at start instead of building it; added 10,000 vectors at a time.
    const graph = createHnsw(DIMENSIONS);
    const CHUNK = 10_000;
    const matrix = new Float32Array(CHUNK * DIMENSIONS);
    const data = await searchDataWithStandInVectors(config, 'search-graph-', names, 777, (i, _text, vector) => {
      if (i >= N) return;
      matrix.set(vector, (i % CHUNK) * DIMENSIONS);
      if (i % CHUNK === CHUNK - 1 || i === N - 1) {
        const from = i - (i % CHUNK);
        graph.add(BigUint64Array.from({ length: i - from + 1 }, (_, k) => BigInt(from + k)), matrix.subarray(0, (i - from + 1) * DIMENSIONS), 0);
      }
    });
    tmp = data.dir;
    const file = path.join(tmp, 'embeddings', graphFileName('live'));
    graph.save(`${file}.prebuilt`);
    writeFileSync(`${file}.names.json`, JSON.stringify({ size: N, graph: path.basename(`${file}.prebuilt`), names: first.map((name, i) => [name, data.texts[i]]) }));
    onMarket = await db.dataSource.getRepository(Domain).countBy({ environment: 'live', status: In(['listed', 'reserved']) });
    searchProcess = await startSearchProcess({
      env: searchProcessEnv(config, db.url, `unix:${tmp}/s.sock`, tmp, { LOG_LEVEL: 'info' }),
      output: (line) => lines.push(line),
    });
  });

  after(async () => {
    await searchProcess?.stop();
    await db?.drop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it(`keeps answering while it saves the graph of ${N} names after ${CHANGES} changes and opens the graph it saved: its event loop answers /status while the graph is saved and opened, and searches answer throughout`, async function () {
    this.timeout(600_000);
    const child = searchProcess!;
    const baseUrl = await listen(createApp({ ...getStack().appDeps, search: child.client }));
    const { client } = await newPartner({ environment: 'live', scopes: ['search'], baseUrl });
    const { pid } = await child.client.status();
    const schedstat = `/proc/${pid}/task/${pid}/schedstat`;
    const ranMs = () => (existsSync(schedstat) ? Number(readFileSync(schedstat, 'utf8').split(' ')[0]) / 1e6 : NaN);
    const search = async (q: string) => {
      const res = await client.get<{ data: Array<{ name: string }> }>(`/api/partner/v1/domains/search?q=${encodeURIComponent(q)}`);
      assert.equal(res.status, 200, res.text);
      return res.body.data;
    };

    /**
     * Until `done`: a /status every few ms, and a search through the API every 200 ms beside them.
     * The longest the child's main thread ran during one /status (bounded by how long that
     * /status waited: the longest turn of its loop it waited for), over all of them and over those
     * with no search under way (a search's own turns are not the index's), the slowest /status,
     * the /status answers that said the graph was being saved, the searches.
     */
    const sample = async (done: () => Promise<boolean>) => {
      const started = performance.now();
      const m = { ran: 0, ranBesidesSearches: 0, gc: 0, slowest: 0, statuses: 0, whileSaving: 0, searches: [] as number[] };
      let sampling = true;
      /** Searches sent so far, and whether one is under way. */
      let sent = 0;
      let searchUnderWay = false;
      const searching = (async () => {
        while (sampling) {
          const t = performance.now();
          searchUnderWay = true;
          sent++;
          await search('harbor lantern');
          searchUnderWay = false;
          m.searches.push(performance.now() - t);
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      })();
      try {
        let gcBefore = (await child.client.status()).gcMs;
        while (!(await done())) {
          const [t, r, sentBefore, searchBefore] = [performance.now(), ranMs(), sent, searchUnderWay];
          const { gcMs, environments } = await child.client.status();
          if (environments.live?.saving) m.whileSaving++;
          const [wall, ran] = [performance.now() - t, ranMs() - r];
          // Less the child's GC since its previous /status (a little more than during this one).
          const gc = gcMs - gcBefore;
          gcBefore = gcMs;
          m.gc = Math.max(m.gc, gc);
          m.ran = Math.max(m.ran, Math.min(wall, ran));
          if (!searchBefore && !searchUnderWay && sent === sentBefore) m.ranBesidesSearches = Math.max(m.ranBesidesSearches, Math.min(wall, ran) - gc);
          m.slowest = Math.max(m.slowest, wall);
          m.statuses++;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      } finally {
        sampling = false;
        await searching;
      }
      const sorted = [...m.searches].sort((a, b) => a - b);
      return { seconds: +((performance.now() - started) / 1000).toFixed(1), ranBesidesSearchesMs: +m.ranBesidesSearches.toFixed(1), ranMs: +m.ran.toFixed(1), gcMs: +m.gc.toFixed(1), slowestStatusMs: +m.slowest.toFixed(1), statuses: m.statuses, whileSaving: m.whileSaving, searches: m.searches.length, searchP50Ms: +(sorted[Math.floor(sorted.length / 2)] ?? 0).toFixed(1), searchMaxMs: +(sorted.at(-1) ?? 0).toFixed(1) };
    };
    const live = async () => (await child.client.status()).environments.live;
    const saved = () => lines.filter((l) => /HNSW graph of \d+ names saved/.test(l)).length;

    try {
      assert.equal((await live()).vectorIndex, 'hnsw', 'the saved graph is in use');

      // 10,050 new names: the sync that reads them (one turn of the loop per 20,000 rows read, in
      // the old code as in the new) is done when this search answers; then their vectors are
      // added and, at 10,000 changes, the graph is saved and the saved graph put in use.
      const savesBefore = saved();
      await importInventory(db!.dataSource, 'live', changes.map(liveListing));
      await search('amber apple');
      const saving = await sample(async () => saved() > savesBefore && (await live()).pendingVectors === 0);

      console.log(`      (search process, longest its main thread ran during one /status, and searches, while ${CHANGES} names were added and the graph saved and opened: ${JSON.stringify(saving)})`);
      assert.ok(saving.searches >= 3, 'searches answered meanwhile');
      assert.ok(saving.whileSaving >= TURNS_WHILE_SAVING, `the search process answered ${saving.whileSaving} /status while its graph was saved and opened: that work is back on its event loop`);

      // The saved graph holds the new names: they are found.
      const status = await live();
      assert.equal(status.names, onMarket + CHANGES);
      assert.equal(status.vectorIndex, 'hnsw');
      const newest = changes.at(-1)!;
      const hits = await search(newest.slice(3, newest.indexOf('.')));
      assert.ok(hits.some((h) => h.name === newest), JSON.stringify(hits));
    } catch (err) {
      process.stderr.write(lines.join('\n') + '\n');
      throw err;
    }
  });
});
