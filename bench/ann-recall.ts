/**
 * `npm run bench:ann`: recall of the HNSW vector index against the exact scan, and the latency
 * of each, over an environment's inventory (BENCH_ENV, default live; load one with
 * bench/generate-names.js and the admin import). Queries: the labelled query set plus random
 * names' words. Embeds whatever names are not cached yet (about 800 names/s on 2 cores).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, type Environment } from '../src/config';
import { openProjectDatabase } from '../src/main/runtime';
import { Embedder } from '../src/search/embedder';
import { EmbeddingCache } from '../src/search/embedding-cache';
import { HybridSearch } from '../src/search/hybrid-search';
import { ensureModelFiles, MODEL_ID } from '../src/search/model-files';
import { segmentLabel } from '../src/search/segment';
import { ExactIndex, HnswIndex } from '../src/search/vector-index';

async function main(): Promise<void> {
  const config = loadConfig();
  const environment = (process.env.BENCH_ENV ?? 'live') as Environment;
  const { dataSource, postgres } = await openProjectDatabase(config, () => undefined);
  const embedder = await Embedder.load(await ensureModelFiles(config.toolCacheDir));
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const search = new HybridSearch(dataSource, embedder, new EmbeddingCache(path.join(config.dataDir, 'embeddings', `${MODEL_ID}.bin`)), log, path.join(config.dataDir, 'embeddings'));
  const snapshot = await search.snapshot(environment);
  const n = snapshot.names.length;
  const exact = new ExactIndex(snapshot.vectors, n);
  const started = Date.now();
  const hnsw = HnswIndex.open(snapshot.vectors, n, path.join(config.dataDir, 'embeddings', `recall-${environment}-${n}.usearch`), log);
  log(`HNSW ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const labelled = (JSON.parse(readFileSync(path.join(config.projectRoot, 'data', 'search-queries.json'), 'utf8')) as { queries: Array<{ q: string }> }).queries.map((q) => q.q);
  const sampled = await Promise.all(Array.from({ length: 175 }, (_, i) => snapshot.names[(i * 7919) % n]).map((name) => segmentLabel(name.slice(0, name.indexOf('.')))));
  const queries = await embedder.embedAll([...labelled, ...sampled]);

  let hits5 = 0;
  let hits50 = 0;
  let exactMs = 0;
  let annMs = 0;
  for (const q of queries) {
    let t = process.hrtime.bigint();
    const truth = exact.nearest(q, 50);
    exactMs += Number(process.hrtime.bigint() - t) / 1e6;
    t = process.hrtime.bigint();
    const got = hnsw.nearest(q, 50);
    annMs += Number(process.hrtime.bigint() - t) / 1e6;
    const got5 = new Set(got.slice(0, 5));
    const got50 = new Set(got);
    hits5 += truth.slice(0, 5).filter((i) => got5.has(i)).length;
    hits50 += truth.filter((i) => got50.has(i)).length;
  }
  process.stdout.write(
    [
      `${environment}: ${n} names, ${queries.length} queries`,
      `exact scan: ${(exactMs / queries.length).toFixed(2)} ms per query`,
      `HNSW:       ${(annMs / queries.length).toFixed(3)} ms per query; recall@5 ${(hits5 / (queries.length * 5)).toFixed(3)}, recall@50 ${(hits50 / (queries.length * 50)).toFixed(3)}`,
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
