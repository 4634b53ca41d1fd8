/**
 * `npm run bench:ann`: recall of the HNSW vector index and of the exact index (its int8 scan, the
 * best scored again on the float vectors) against a float scan of every vector, and the latency
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
import { HNSW } from '../src/search/hnsw';
import { exactSearch, MetricKind, type Matches } from 'usearch';
import { DIMENSIONS } from '../src/search/embedder';
import { ExactIndex, type VectorStore } from '../src/search/vector-index';

/** The truth: usearch's brute force over float copies of the slots' vectors, in blocks of 4,096 rows. */
function floatScan(vectors: VectorStore, slots: number[]): (query: Float32Array, k: number) => number[] {
  const blocks: Array<{ part: number[]; rows: Float32Array }> = [];
  for (let i = 0; i < slots.length; i += 4_096) {
    const part = slots.slice(i, i + 4_096);
    const rows = new Float32Array(part.length * DIMENSIONS);
    part.forEach((slot, j) => rows.set(vectors.get(slot), j * DIMENSIONS));
    blocks.push({ part, rows });
  }
  return (query, k) =>
    blocks
      .flatMap(({ part, rows }) => {
        const matches = exactSearch(rows, query, DIMENSIONS, Math.min(k, part.length), MetricKind.IP, 1) as Matches;
        return [...matches.keys].map((row, i): [number, number] => [part[Number(row)], matches.distances[i]]);
      })
      .sort((x, y) => x[1] - y[1])
      .slice(0, k)
      .map(([slot]) => slot);
}

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
  const truth = floatScan(index.vectors, live);
  const exact = new ExactIndex(index.vectors);
  for (const slot of live) exact.add(slot);
  const hnsw = index;
  if (index.vectorIndexKind === 'exact') log(`${n} names (the threshold: ${config.search.annThreshold}): the index is the exact index itself`);

  const labelled = (JSON.parse(readFileSync(path.join(config.projectRoot, 'data', 'search-queries.json'), 'utf8')) as { queries: Array<{ q: string }> }).queries.map((q) => q.q);
  const sampled = await Promise.all(Array.from({ length: 175 }, (_, i) => index.slots[live[(i * 7919) % n]]!.name).map((name) => segmentLabel(name.slice(0, name.indexOf('.')))));
  const queries = await embedder.embedAll([...labelled, ...sampled]);

  let truthMs = 0;
  // As searches ask (the default breadth), or the breadths BENCH_BREADTHS lists (comma-separated), to choose it.
  const breadths = process.env.BENCH_BREADTHS ? process.env.BENCH_BREADTHS.split(',').map(Number) : [HNSW.expansion_search];
  const rows = [{ name: 'exact index (int8 scan, the best scored again)', nearest: (q: Float32Array) => exact.nearest(q, 50) }, ...breadths.map((breadth) => ({ name: `${index.vectorIndexKind === 'exact' ? 'the index (exact)' : 'HNSW'}, breadth ${breadth}`, nearest: (q: Float32Array) => hnsw.nearest(q, 50, breadth) }))];
  const measured = rows.map(() => ({ hits5: 0, hits50: 0, ms: 0 }));
  for (const q of queries) {
    let t = process.hrtime.bigint();
    const best = truth(q, 50);
    truthMs += Number(process.hrtime.bigint() - t) / 1e6;
    for (const [i, row] of rows.entries()) {
      t = process.hrtime.bigint();
      const got = await row.nearest(q);
      measured[i].ms += Number(process.hrtime.bigint() - t) / 1e6;
      // A hit is a name as near as the truth's k-th (names of one label under several TLDs tie).
      const hits = (k: number) => {
        const handle = index.vectors.query(q);
        const kth = index.vectors.dot(best[Math.min(k, best.length) - 1], handle) - 1e-6;
        return Math.min(k, got.slice(0, k).filter((slot) => index.vectors.dot(slot, handle) >= kth).length);
      };
      measured[i].hits5 += hits(5);
      measured[i].hits50 += hits(50);
    }
  }
  process.stdout.write(
    [
      `${environment}: ${n} names, ${queries.length} queries`,
      `float scan (the truth): ${truthMs / queries.length >= 10 ? (truthMs / queries.length).toFixed(1) : (truthMs / queries.length).toFixed(2)} ms per query`,
      ...rows.map((row, i) => `${row.name}: ${(measured[i].ms / queries.length).toFixed(3)} ms per query; recall@5 ${(measured[i].hits5 / (queries.length * 5)).toFixed(3)}, recall@50 ${(measured[i].hits50 / (queries.length * 50)).toFixed(3)}`),
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
