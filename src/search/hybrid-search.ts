/**
 * Hybrid search: keyword candidates (Postgres full text + trigram, the KeywordSearch ranker) and
 * semantic candidates (MiniLM cosine between the query and each name's segmented label, exact
 * scan over the environment's names), merged and reranked by one documented scorer:
 *
 *   semantic = clamp((cosine − 0.15) / 0.55, 0, 1)
 *   score    = clamp(max(keyword, 0.5·keyword + 0.55·semantic + 0.15·keyword·semantic) + 0.01 if available, 0, 1)
 *
 * so a name that matches both the words and the meaning beats one that matches either. The
 * vector set follows the inventory: each search compares the environment's inventory version
 * (count and last update of names on the market) and re-syncs, embedding only names not yet
 * cached, so an import, a sale or a new listing shows without a restart.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { KeywordSearch, MAX_RESULTS, type DomainSearch, type SearchHit } from '../discovery/search';
import { DIMENSIONS, type Embedder } from './embedder';
import type { EmbeddingCache } from './embedding-cache';
import { segmentLabel } from './segment';

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
}

/** Dot product of `query` with each of the `n` vectors laid out one after another (exact scan). */
export function dotAll(vectors: Float32Array, query: Float32Array, n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0, base = 0; i < n; i++, base += DIMENSIONS) {
    let dot = 0;
    for (let d = 0; d < DIMENSIONS; d += 4) {
      dot += vectors[base + d] * query[d] + vectors[base + d + 1] * query[d + 1] + vectors[base + d + 2] * query[d + 2] + vectors[base + d + 3] * query[d + 3];
    }
    out[i] = dot;
  }
  return out;
}

/** Indices of the k largest values, best first (one pass with a small sorted buffer). */
export function topK(values: Float32Array, k: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < values.length; i++) {
    if (best.length === k && values[i] <= values[best[k - 1]]) continue;
    let at = best.length === k ? k - 1 : best.length;
    if (best.length < k) best.push(i);
    while (at > 0 && values[best[at - 1]] < values[i]) {
      best[at] = best[at - 1];
      at--;
    }
    best[at] = i;
  }
  return best;
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
    const cosines = dotAll(snapshot.vectors, queryVector, snapshot.names.length);
    const index = snapshot.indexOf;
    const candidates = new Map<number, number>(); // snapshot index -> keyword score
    for (const hit of keywordHits) {
      const i = index.get(hit.name);
      if (i !== undefined) candidates.set(i, hit.score);
    }
    const bySemantic = topK(cosines, CANDIDATES);
    for (const i of bySemantic) if (!candidates.has(i)) candidates.set(i, 0);
    return [...candidates.entries()]
      .map(([i, keyword]) => ({ i, score: blend(keyword, semanticScore(cosines[i]), snapshot.available[i]) }))
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
