/**
 * `npm run bench:ann`: recall of the HNSW vector index against the exact scan, and the latency
 * of each, over an environment's inventory (BENCH_ENV, default live; load one with
 * bench/generate-names.js and the admin import). Queries: the labelled query set plus random
 * names' words. Embeds whatever names are not cached yet (about 900 names/s on 2 cores) and builds
 * or loads the saved graph, as the API does on start.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, type Environment } from '../src/config';
import { openProjectDatabase } from '../src/main/runtime';
import { Embedder } from '../src/search/embedder';
import { startSearch } from '../src/main/services';
import { ensureModelFiles } from '../src/search/model-files';
import { segmentLabel } from '../src/search/segment';
import { HNSW, WIDE_SEARCH } from '../src/search/hnsw';
import { ANN_THRESHOLD, ExactIndex } from '../src/search/vector-index';

async function main(): Promise<void> {
  const config = loadConfig();
  const environment = (process.env.BENCH_ENV ?? 'live') as Environment;
  const { dataSource, postgres } = await openProjectDatabase(config, () => undefined);
  const embedder = await Embedder.load(await ensureModelFiles(config.toolCacheDir));
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const started = Date.now();
  const index = await (await startSearch(config, dataSource, log, [environment])).index(environment);
  // A graph missing on disk is built in a worker after the load: measure the graph, not the exact scan answering meanwhile.
  await index.graphBuilt();
  log(`index ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const live = index.slots.flatMap((e, slot) => (e && index.hasVector(slot) ? [slot] : []));
  const n = live.length;
  const exact = new ExactIndex(index.vectors);
  for (const slot of live) exact.add(slot);
  const hnsw = index;
  if (n <= ANN_THRESHOLD) log(`only ${n} names: the index is the exact scan itself`);

  const labelled = (JSON.parse(readFileSync(path.join(config.projectRoot, 'data', 'search-queries.json'), 'utf8')) as { queries: Array<{ q: string }> }).queries.map((q) => q.q);
  const sampled = await Promise.all(Array.from({ length: 175 }, (_, i) => index.slots[live[(i * 7919) % n]]!.name).map((name) => segmentLabel(name.slice(0, name.indexOf('.')))));
  const queries = await embedder.embedAll([...labelled, ...sampled]);

  let exactMs = 0;
  // As searches ask: the query's own neighbours wide (WIDE_SEARCH), its definitions' at the default breadth.
  const breadths = [WIDE_SEARCH, HNSW.expansion_search];
  const measured = breadths.map(() => ({ hits5: 0, hits50: 0, ms: 0 }));
  for (const q of queries) {
    let t = process.hrtime.bigint();
    const truth = exact.nearest(q, 50);
    exactMs += Number(process.hrtime.bigint() - t) / 1e6;
    for (const [i, breadth] of breadths.entries()) {
      t = process.hrtime.bigint();
      const got = await hnsw.nearest(q, 50, breadth);
      measured[i].ms += Number(process.hrtime.bigint() - t) / 1e6;
      const got5 = new Set(got.slice(0, 5));
      const got50 = new Set(got);
      measured[i].hits5 += truth.slice(0, 5).filter((slot) => got5.has(slot)).length;
      measured[i].hits50 += truth.filter((slot) => got50.has(slot)).length;
    }
  }
  process.stdout.write(
    [
      `${environment}: ${n} names, ${queries.length} queries`,
      `exact scan: ${(exactMs / queries.length).toFixed(2)} ms per query`,
      ...breadths.map((breadth, i) => `HNSW, breadth ${breadth}: ${(measured[i].ms / queries.length).toFixed(3)} ms per query; recall@5 ${(measured[i].hits5 / (queries.length * 5)).toFixed(3)}, recall@50 ${(measured[i].hits50 / (queries.length * 50)).toFixed(3)}`),
      '',
    ].join('\n'),
  );
  await dataSource.destroy();
  await postgres.stop();
}

main().catch((err) => {
  process.stderr.write(`ann: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
