/**
 * Hybrid search: keyword candidates (Postgres full text + trigram, the KeywordSearch ranker) and
 * semantic candidates (MiniLM cosine between the query and each name's segmented label: exact
 * scan up to 50k names, an HNSW index above), merged and reranked by one documented scorer:
 *
 *   semantic = clamp((cosine − 0.15) / 0.55, 0, 1)
 *   score    = clamp(max(keyword, 0.5·keyword + 0.55·semantic + 0.15·keyword·semantic) + 0.01 if available, 0, 1)
 *
 * so a name that matches both the words and the meaning beats one that matches either. The
 * vector set follows the inventory: each search compares the environment's inventory version
 * (count and last update of names on the market) and re-syncs, embedding only names not yet
 * cached, so an import, a sale or a new listing shows without a restart.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { KeywordSearch, MAX_RESULTS, type DomainSearch, type SearchHit } from '../discovery/search';
import { DIMENSIONS, type Embedder } from './embedder';
import type { EmbeddingCache } from './embedding-cache';
import { segmentLabel } from './segment';
import { ANN_THRESHOLD, ExactIndex, HnswIndex, type VectorIndex } from './vector-index';

const CANDIDATES = 50;
/** Below this a candidate is noise, not a weak match. */
const MIN_SCORE = 0.12;

interface Snapshot {
  version: string;
  names: string[];
  available: boolean[];
  prices: number[];
  currencies: string[];
  vectors: Float32Array;
  indexOf: Map<string, number>;
  index: VectorIndex;
}

export function semanticScore(cosine: number): number {
  return Math.min(1, Math.max(0, (cosine - 0.15) / 0.55));
}

export function blend(keyword: number, semantic: number, available: boolean): number {
  // A strong keyword or typo match stands on its own: a misspelt query embeds as noise.
  const score = Math.max(keyword, 0.5 * keyword + 0.55 * semantic + 0.15 * keyword * semantic) + (available ? 0.01 : 0);
  return Math.min(1, Math.max(0, score));
}

export class HybridSearch implements DomainSearch {
  private readonly keyword: KeywordSearch;
  private readonly snapshots = new Map<Environment, Snapshot>();
  private syncing = new Map<Environment, Promise<Snapshot>>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly embedder: Embedder,
    private readonly cache: EmbeddingCache,
    private readonly log: (m: string) => void = () => undefined,
    /** Where HNSW indexes of large inventories are saved; none means rebuild on each start. */
    private readonly indexDir?: string,
  ) {
    this.keyword = new KeywordSearch(dataSource);
  }

  /** The environment's names and vectors, rebuilt when the inventory changed. */
  async snapshot(environment: Environment): Promise<Snapshot> {
    const [{ version }] = (await this.dataSource.query(
      `SELECT count(*) || ':' || coalesce(max(updated_at)::text, '') AS version FROM domains WHERE environment = $1`,
      [environment],
    )) as Array<{ version: string }>;
    const current = this.snapshots.get(environment);
    if (current?.version === version) return current;
    let pending = this.syncing.get(environment);
    if (!pending) {
      pending = this.build(environment, version).finally(() => this.syncing.delete(environment));
      this.syncing.set(environment, pending);
    }
    return pending;
  }

  private async build(environment: Environment, version: string): Promise<Snapshot> {
    const rows = (await this.dataSource.query(
      `SELECT name, label, status, buy_now_price_cents, currency FROM domains WHERE environment = $1 AND status IN ('listed', 'reserved') ORDER BY name`,
      [environment],
    )) as Array<{ name: string; label: string; status: string; buy_now_price_cents: string; currency: string }>;
    const texts = await Promise.all(rows.map((r) => segmentLabel(r.label)));
    const missing = [...new Set(texts.filter((t) => !this.cache.get(t)))];
    if (missing.length) {
      this.log(`embedding ${missing.length} ${environment} names…`);
      const vectors = await this.embedder.embedAll(missing, (done) => {
        if (done % 1024 === 0) this.log(`  ${done}/${missing.length}`);
      });
      missing.forEach((t, i) => this.cache.set(t, vectors[i]));
      this.cache.save();
    }
    const flat = new Float32Array(rows.length * DIMENSIONS);
    texts.forEach((t, i) => flat.set(this.cache.get(t)!, i * DIMENSIONS));
    const snapshot: Snapshot = {
      version,
      names: rows.map((r) => r.name),
      available: rows.map((r) => r.status === 'listed'),
      prices: rows.map((r) => Number(r.buy_now_price_cents)),
      currencies: rows.map((r) => r.currency.trim()),
      vectors: flat,
      indexOf: new Map(rows.map((r, i) => [r.name, i])),
      index:
        rows.length > ANN_THRESHOLD
          ? HnswIndex.open(flat, rows.length, this.indexDir && path.join(this.indexDir, `${environment}-${createHash('sha256').update(version).digest('hex').slice(0, 16)}.usearch`), this.log)
          : new ExactIndex(flat, rows.length),
    };
    this.snapshots.set(environment, snapshot);
    return snapshot;
  }

  async search(environment: Environment, query: string, limit = MAX_RESULTS): Promise<SearchHit[]> {
    const [snapshot, [queryVector], keywordHits] = await Promise.all([
      this.snapshot(environment),
      this.embedder.embed([query.toLowerCase()]),
      this.keyword.search(environment, query, CANDIDATES),
    ]);
    const semanticHits = snapshot.index.nearest(queryVector, CANDIDATES);
    const cosine = (i: number) => {
      let dot = 0;
      for (let d = 0, base = i * DIMENSIONS; d < DIMENSIONS; d++) dot += snapshot.vectors[base + d] * queryVector[d];
      return dot;
    };
    const index = snapshot.indexOf;
    const candidates = new Map<number, number>(); // snapshot index -> keyword score
    for (const hit of keywordHits) {
      const i = index.get(hit.name);
      if (i !== undefined) candidates.set(i, hit.score);
    }
    for (const i of semanticHits) if (!candidates.has(i)) candidates.set(i, 0);
    return [...candidates.entries()]
      .map(([i, keyword]) => ({ i, score: blend(keyword, semanticScore(cosine(i)), snapshot.available[i]) }))
      .filter((c) => c.score >= MIN_SCORE)
      .sort((a, b) => b.score - a.score || snapshot.names[a.i].length - snapshot.names[b.i].length)
      .slice(0, limit)
      .map(({ i, score }) => ({
        name: snapshot.names[i],
        available: snapshot.available[i],
        buyNowPriceCents: snapshot.prices[i],
        currency: snapshot.currencies[i],
        score: Math.round(score * 10_000) / 10_000,
      }));
  }
}
