/**
 * Domain search behind one interface, so that the ranking can change (hybrid semantic search
 * replaces the keyword ranker later) without touching the API.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';

export const MAX_RESULTS = 5;

export interface SearchHit {
  name: string;
  available: boolean;
  buyNowPriceCents: number;
  currency: string;
  /** Relevance in [0, 1], best first. */
  score: number;
}

export interface DomainSearch {
  search(environment: Environment, query: string, limit?: number): Promise<SearchHit[]>;
}

/** Lower-case words of the query (letters and digits), at most 8. */
export function queryWords(query: string): string[] {
  return query.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 0).slice(0, 8);
}

/**
 * Keyword ranking in Postgres over run-together labels (`coffeebar`): exact label, the query
 * (spaces removed) inside the label, each query word inside the label or close to it by trigram
 * word similarity (typo tolerance), and full-text match on the category. Names on the market
 * only (listed or reserved); reserved ones answer `available: false`.
 */
export class KeywordSearch implements DomainSearch {
  constructor(private readonly dataSource: DataSource) {}

  async search(environment: Environment, query: string, limit = MAX_RESULTS): Promise<SearchHit[]> {
    const words = queryWords(query);
    if (words.length === 0) return [];
    const joined = words.join('');
    // An indexable pre-filter (trigram GIN on label, GIN on the document) keeps the scoring below
    // to the few names that can match; `%>` is word similarity ≥ pg_trgm.word_similarity_threshold,
    // which the connection sets to 0.45 (see data-source.ts).
    const params: unknown[] = [environment, joined, words, words.join(' '), limit];
    // One index scan per condition, unioned: an OR of them all tempts the planner into a full scan.
    const prefilter = [`SELECT id FROM domains WHERE label %> $2`, `SELECT id FROM domains WHERE search_document @@ plainto_tsquery('english', $4)`];
    // Words under 3 letters are everywhere; fuzzy matches of 3-letter words are too loose.
    for (const w of new Set([joined, ...words.filter((w) => w.length >= 3)])) {
      params.push(`%${w.replace(/[\\%_]/g, '\\$&')}%`);
      prefilter.push(`SELECT id FROM domains WHERE label LIKE $${params.length}`);
      if (w.length >= 4) {
        params.push(w);
        prefilter.push(`SELECT id FROM domains WHERE label %> $${params.length}`);
      }
    }
    const rows = (await this.dataSource.query(
      `WITH candidates AS (${prefilter.join(' UNION ')}),
       scored AS MATERIALIZED (
         SELECT d.name, d.status, d.buy_now_price_cents, d.currency, d.label,
           CASE WHEN d.label = $2 THEN 1.0 ELSE 0 END AS exact,
           CASE WHEN strpos(d.label, $2) > 0 THEN 0.6 + 0.35 * length($2)::float / length(d.label) ELSE 0 END AS contained,
           (SELECT avg(CASE WHEN strpos(d.label, w) > 0 THEN 1.0 ELSE word_similarity(w, d.label) END) FROM unnest($3::text[]) AS w) AS coverage,
           word_similarity($2, d.label) AS fuzzy,
           CASE WHEN d.search_document @@ plainto_tsquery('english', $4) THEN 1.0 ELSE 0 END AS topical
         FROM domains d JOIN candidates c ON c.id = d.id
         WHERE d.environment = $1 AND d.status IN ('listed', 'reserved')
       )
       SELECT name, status, buy_now_price_cents, currency,
         LEAST(1.0, GREATEST(exact, contained, 0.85 * coverage * (0.7 + 0.3 * LEAST(1.0, length($2)::float / length(label))), 0.75 * fuzzy, 0.3 * topical)) AS score
       FROM scored
       WHERE exact > 0 OR contained > 0 OR coverage >= 0.5 OR fuzzy >= 0.45 OR topical > 0
       ORDER BY score DESC, (status = 'listed') DESC, length(name), name
       LIMIT $5`,
      params,
    )) as Array<{ name: string; status: string; buy_now_price_cents: string; currency: string; score: number }>;
    return rows.map((r) => ({
      name: r.name,
      available: r.status === 'listed',
      buyNowPriceCents: Number(r.buy_now_price_cents),
      currency: r.currency.trim(),
      score: Math.round(Number(r.score) * 10_000) / 10_000,
    }));
  }
}
