/**
 * The OpenSearch index of the names on the market, versioned here: a change to the settings or
 * mappings bumps MAPPING_VERSION, and `admin search reindex` builds an index of the new version
 * beside the one in use and moves the alias to it. Searches and writes always go through the
 * alias; each physical index is `<alias>-v<version>-<time>`.
 *
 * One document per name on the market (listed or reserved) of either environment, id
 * `<environment>:<name>`; a name that leaves the market is deleted.
 *   name       the domain name (keyword): looked up when a query is written as a name
 *   label      the label (keyword) for an exact match; `label.trigram` for the label holding a
 *              word (the phrase of its trigrams) and for a word close to it by trigrams (typos);
 *              `label.infix` (wildcard) for any other word (under 3 characters, or not letters
 *              and digits)
 *   text       the label split into words (`espresso bar`), BM25 over them
 *   words      the same words as keywords: the names holding a word (query expansions)
 *   document   label and category, English stems: the keyword ranker's `topical` match
 *   vector     the name's MiniLM vector (384 d), HNSW by lucene, cosine; not in the stored
 *              _source (version 2: a hit's fetch parsed it, ~7.5 KB of JSON per hit, for
 *              nothing), so a change to a name indexes its document again whole, never as a
 *              partial update (which would rebuild it from the source, without its vector)
 *   vector_b64 the same vector as little-endian float32 in base64, returned with a hit so the
 *              scorer has the name's cosine to any query vector (not indexed)
 * Version 3 refreshes only when asked (after each sync's writes, after a reindex's load) instead
 * of every second: indexing a million names at 1 s made segments of a few hundred documents,
 * whose merges (each merge builds its HNSW graph again) outlasted the indexing.
 * Beside them, one document per environment (`__horizon:<environment>`, environment `__horizon`)
 * holds the inventory horizon its sync has reached, so a restart carries on from there.
 */
import { DIMENSIONS } from '../embedder';

export const MAPPING_VERSION = 3;

/** The alias searches and writes use (OPENSEARCH_INDEX). */
export const DEFAULT_ALIAS = 'partner-api-domains';

export function indexSettings(options: { shards?: number; replicas?: number } = {}): Record<string, unknown> {
  return {
    settings: {
      index: {
        number_of_shards: options.shards ?? 1,
        number_of_replicas: options.replicas ?? 0,
        knn: true,
        // No scheduled refresh (version 3): each write refreshes once it is done (a sync, a
        // reindex's load), so a bulk load of a million names is not cut into a segment a second.
        refresh_interval: '-1',
      },
      analysis: {
        tokenizer: {
          label_trigrams: { type: 'ngram', min_gram: 3, max_gram: 3, token_chars: ['letter', 'digit'] },
        },
        analyzer: {
          label_trigrams: { type: 'custom', tokenizer: 'label_trigrams', filter: ['lowercase'] },
        },
      },
    },
    mappings: {
      dynamic: 'strict',
      // The vector as numbers is for the k-NN graph only: kept out of the stored source, which
      // every hit's fetch reads (~7.5 KB of a ~10 KB source), vector_b64 is the source's copy.
      _source: { excludes: ['vector'] },
      _meta: { mapping_version: MAPPING_VERSION },
      properties: {
        environment: { type: 'keyword' },
        name: { type: 'keyword' },
        label: {
          type: 'keyword',
          fields: {
            infix: { type: 'wildcard' },
            trigram: { type: 'text', analyzer: 'label_trigrams' },
          },
        },
        text: { type: 'text', analyzer: 'standard' },
        words: { type: 'keyword' },
        document: { type: 'text', analyzer: 'english' },
        available: { type: 'boolean' },
        buy_now_price_cents: { type: 'long' },
        currency: { type: 'keyword' },
        vector: {
          type: 'knn_vector',
          dimension: DIMENSIONS,
          method: { name: 'hnsw', engine: 'lucene', space_type: 'cosinesimil', parameters: { m: 16, ef_construction: 128 } },
        },
        vector_b64: { type: 'binary', doc_values: false },
        // Only in an environment's horizon document (environment `__horizon`): where its sync has reached.
        horizon: { type: 'keyword', index: false },
      },
    },
  };
}

/** What a document holds (vector_b64 and vector are the same vector). */
export interface NameDocument {
  environment: string;
  name: string;
  label: string;
  text: string;
  words: string[];
  document: string;
  available: boolean;
  buy_now_price_cents: number;
  currency: string;
  vector?: number[];
  vector_b64?: string;
}

export function documentId(environment: string, name: string): string {
  return `${environment}:${name}`;
}

export function encodeVector(vector: Float32Array): string {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
}

export function decodeVector(encoded: string): Float32Array {
  const bytes = Buffer.from(encoded, 'base64');
  // Copied into an aligned buffer of its own (a Buffer's offset into its pool may be odd).
  const out = new Float32Array(bytes.length / 4);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}
