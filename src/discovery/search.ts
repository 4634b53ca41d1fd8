/**
 * Domain search behind one interface, so that the ranking can change (hybrid semantic search
 * replaces the keyword ranker later) without touching the API.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { Domain } from '../db/entities/domain';

export const MAX_RESULTS = 5;
/** Names one pre-filter condition may contribute to the scoring (here and in the embedded engine's label index). */
export const PROBE_LIMIT = 200;

export interface SearchHit {
  name: string;
  available: boolean;
  buyNowPriceCents: number;
  currency: string;
  /** Relevance in [0, 1], best first. */
  score: number;
}

export interface KeywordOptions {
  /** Query words that may be misspelt, to be matched by trigram word similarity too (default: all). */
  fuzzy?: (word: string) => boolean;
  /** Other words to look for in labels in place of a query word (letters only), e.g. `jewel` for `jewelry`. */
  variants?: (word: string) => string[];
}

export interface DomainSearch {
  search(environment: Environment, query: string, limit?: number): Promise<SearchHit[]>;
  /** Resolves when the search can answer (a search held elsewhere: the search process); for /readyz. */
  ready?(): Promise<void>;
}

/** The names on the market of an environment, spelt out so that the partial indexes apply (`environment` is one of two known values, never user text). */
function onMarket(environment: Environment, alias = ''): string {
  return `${alias}environment = '${environment === 'live' ? 'live' : 'sandbox'}' AND ${alias}status IN ('listed', 'reserved')`;
}

/** `%word%` for LIKE, with LIKE's own characters escaped. */
const containing = (word: string) => `%${word.replace(/[\\%_]/g, '\\$&')}%`;

/** The query words searched by keyword, and looked up as possible names (see the hybrid search's spelling). */
export const MAX_QUERY_WORDS = 8;

/** A query's words as every part of search reads them: lower-case runs of letters and digits. */
export function splitWords(query: string): string[] {
  return query.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 0);
}

/** The query's first MAX_QUERY_WORDS words. */
export function queryWords(query: string): string[] {
  return splitWords(query).slice(0, MAX_QUERY_WORDS);
}

/**
 * Keyword ranking in Postgres over run-together labels (`coffeebar`): exact label, the query
 * (spaces removed) inside the label, each query word inside the label or close to it by trigram
 * word similarity (typo tolerance), and full-text match on the category. Names on the market
 * only (listed or reserved); reserved ones answer `available: false`.
 */
export class KeywordSearch implements DomainSearch {
  constructor(private readonly dataSource: DataSource) {}

  /** Up to `limit` names on the market whose label holds the word (one probe of the trigram index). */
  async namesContaining(environment: Environment, word: string, limit: number): Promise<string[]> {
    const rows = await this.dataSource
      .getRepository(Domain)
      .createQueryBuilder('d')
      .select('d.name', 'name')
      .where(onMarket(environment, 'd.'))
      .andWhere('d.label LIKE :pattern', { pattern: containing(word) })
      .limit(limit)
      .getRawMany<{ name: string }>();
    return rows.map((r) => r.name);
  }

  /**
   * By default every query word may be misspelt and gets a trigram word-similarity probe. The
   * hybrid search has corrected the query already: it probes only the words it could not place
   * (neither the inventory's nor English), and looks for the inventory's variants of the others
   * (`jewel` for `jewelry`) with LIKE, which the trigram index answers far faster at 1M names.
   */
  async search(environment: Environment, query: string, limit = MAX_RESULTS, options: KeywordOptions = {}): Promise<SearchHit[]> {
    const { fuzzy = () => true, variants = () => [] } = options;
    const words = queryWords(query);
    if (words.length === 0) return [];
    const joined = words.join('');
    // An indexable pre-filter (trigram GIN on label, GIN on the document, each partial: one
    // environment's names on the market) keeps the scoring below to the names that can match;
    // `%>` is word similarity ≥ pg_trgm.word_similarity_threshold, which the connection sets to
    // 0.45 (see data-source.ts). The partial indexes' predicate is spelt out as a literal so the
    // planner can use them. Each probe is capped, so that a short word inside thousands of names
    // cannot make the scoring slow.
    const params: unknown[] = [environment, joined, words, words.join(' '), limit];
    const probe = (condition: string) => `(SELECT id FROM domains WHERE ${onMarket(environment)} AND ${condition} LIMIT ${PROBE_LIMIT})`;
    // One index scan per condition, unioned: an OR of them all tempts the planner into a full scan.
    const prefilter = [probe('label = $2'), probe(`search_document @@ plainto_tsquery('english', $4)`)];
    // Words under 3 letters are everywhere; fuzzy matches of 3-letter words are too loose.
    for (const w of new Set([joined, ...words.filter((w) => w.length >= 3)])) {
      params.push(containing(w));
      prefilter.push(probe(`label LIKE $${params.length}`));
      // The joined words of a phrase are long, and slow to match by similarity; each word is probed.
      if (w.length >= 4 && fuzzy(w) && (w !== joined || words.length === 1)) {
        params.push(w);
        prefilter.push(probe(`label %> $${params.length}`));
      }
      for (const v of w === joined && words.length > 1 ? [] : variants(w)) {
        params.push(containing(v));
        prefilter.push(probe(`label LIKE $${params.length}`));
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
