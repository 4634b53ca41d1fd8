/**
 * `npm run search:quality`: nDCG@5 per query kind (literal, meaning, typo) of the hybrid search
 * and of the keyword ranker alone, over the sandbox inventory, with the labelled queries in
 * data/search-queries.json. Uses the dev stack's database (or DATABASE_URL).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { KeywordSearch, type DomainSearch } from '../src/discovery/search';
import { openProjectDatabase } from '../src/main/runtime';
import { Embedder } from '../src/search/embedder';
import { EmbeddingCache } from '../src/search/embedding-cache';
import { HybridSearch } from '../src/search/hybrid-search';
import { ensureModelFiles, MODEL_ID } from '../src/search/model-files';

interface LabelledQuery {
  kind: string;
  q: string;
  stems: string[];
  category: string;
}

function grade(name: string, category: string, query: LabelledQuery): number {
  const label = name.slice(0, name.indexOf('.'));
  if (query.stems.some((s) => label.includes(s))) return 2;
  return category === query.category ? 1 : 0;
}

function dcg(grades: number[]): number {
  return grades.reduce((sum, g, i) => sum + (2 ** g - 1) / Math.log2(i + 2), 0);
}

async function main(): Promise<void> {
  const config = loadConfig();
  const { queries } = JSON.parse(readFileSync(path.join(config.projectRoot, 'data', 'search-queries.json'), 'utf8')) as { queries: LabelledQuery[] };
  const { dataSource, postgres } = await openProjectDatabase(config, () => undefined);
  const rows = (await dataSource.query(`SELECT name, category FROM domains WHERE environment = 'sandbox' AND status IN ('listed', 'reserved')`)) as Array<{ name: string; category: string }>;
  const categoryOf = new Map(rows.map((r) => [r.name, r.category]));
  const embedder = await Embedder.load(await ensureModelFiles(config.toolCacheDir));
  const rankers: Record<string, DomainSearch> = {
    hybrid: new HybridSearch(dataSource, embedder, new EmbeddingCache(path.join(config.dataDir, 'embeddings', `${MODEL_ID}.bin`)), (m) => process.stderr.write(`${m}\n`)),
    keyword: new KeywordSearch(dataSource),
  };
  for (const [label, ranker] of Object.entries(rankers)) {
    const byKind = new Map<string, number[]>();
    for (const query of queries) {
      const hits = await ranker.search('sandbox', query.q, 5);
      const got = hits.map((h) => grade(h.name, categoryOf.get(h.name) ?? '', query));
      const ideal = rows.map((r) => grade(r.name, r.category, query)).sort((a, b) => b - a).slice(0, 5);
      const ndcg = dcg(ideal) ? dcg(got) / dcg(ideal) : 0;
      byKind.set(query.kind, [...(byKind.get(query.kind) ?? []), ndcg]);
      if (process.env.VERBOSE) process.stdout.write(`${label} ${query.kind} ${query.q}: ${ndcg.toFixed(3)} ${hits.map((h) => h.name).join(' ')}\n`);
    }
    const all = [...byKind.values()].flat();
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    process.stdout.write(`${label.padEnd(8)} nDCG@5 all ${mean(all).toFixed(3)}  ${[...byKind].map(([k, v]) => `${k} ${mean(v).toFixed(3)}`).join('  ')}\n`);
  }
  await dataSource.destroy();
  await postgres.stop();
}

main().catch((err) => {
  process.stderr.write(`search-quality: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
