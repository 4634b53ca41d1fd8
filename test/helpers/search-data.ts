/**
 * A search process's data directory for tests that need many live names with vectors: the
 * suite's sandbox embeddings, and stand-in vectors for the given names (seeded random unit
 * vectors, keyed by the segmented label as the search process looks them up), so that the child
 * embeds only the names' few distinct words with the real model.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../../src/config';
import type { InventoryRow } from '../../src/discovery/inventory';
import { DIMENSIONS } from '../../src/search/embedder';
import { EmbeddingCache } from '../../src/search/embedding-cache';
import { MODEL_ID } from '../../src/search/model-files';
import { segmentLabel } from '../../src/search/segment';
import { testSearchDataDir } from './stack';

/**
 * A new data directory (in tmp, starting with `prefix`) holding stand-in live vectors for `names`,
 * and each name's segmented label; `each` sees every name's index, label and vector as it is made
 * (none is kept here, so that a test's process holds no copy of them all).
 */
export async function searchDataWithStandInVectors(config: Config, prefix: string, names: string[], seed = 12345, each: (i: number, text: string, vector: Float32Array) => void = () => undefined): Promise<{ dir: string; texts: string[] }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  mkdirSync(path.join(dir, 'embeddings'));
  const sandboxLog = path.join(testSearchDataDir(config), 'embeddings', `sandbox-${MODEL_ID}.log`);
  if (existsSync(sandboxLog)) copyFileSync(sandboxLog, path.join(dir, 'embeddings', `sandbox-${MODEL_ID}.log`));
  const cache = new EmbeddingCache(path.join(dir, 'embeddings', `live-${MODEL_ID}.log`));
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  const texts: string[] = [];
  for (const [i, name] of names.entries()) {
    const v = new Float32Array(DIMENSIONS);
    let norm = 0;
    for (let d = 0; d < DIMENSIONS; d++) norm += (v[d] = random() - 0.5) ** 2;
    for (let d = 0; d < DIMENSIONS; d++) v[d] /= Math.sqrt(norm);
    texts.push(await segmentLabel(name.slice(0, name.indexOf('.'))));
    cache.set(texts[i], v);
    each(i, texts[i], v);
    if (i % 20_000 === 19_999) cache.save();
  }
  cache.save();
  return { dir, texts };
}

/** A live listing of `name` as these tests import them (one price, listed). */
export function liveListing(name: string): InventoryRow {
  return { name, category: 'general', buy_now_price_cents: 120_000, floor_price_cents: 90_000, currency: 'USD', status: 'listed', active_site: false, registered_year: 2020 };
}
