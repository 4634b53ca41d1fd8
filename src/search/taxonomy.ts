/**
 * Kinds of things, from WordNet's noun hierarchy (hypernyms: a sofa is a kind of seat, a seat a
 * kind of furniture). Names are often made of the broader word for what a query names: `tabby`
 * → `cat`, `pooch` → `dog`, `patisserie` → `bakery`, `houseplant` → `flora` (plant, flora, plant
 * life), which the embedding model alone ranks below names that merely look alike (`house…`).
 * Only nouns, in their first two senses (WordNet's most frequent), and two levels up, where a
 * kind still says something about the thing; the caller weighs each word by its similarity to
 * the query, so a kind of an unintended sense counts for little.
 */
import { LRUCache } from 'lru-cache';
import { senses, wordNet, type Sense } from './lexicon';

const SENSES = 2;
const HYPERNYM = new Set(['@', '@i']);

const synsets = new LRUCache<string, Promise<Sense>>({ max: 50_000 });
const seek = (offset: string): Promise<Sense> => {
  let found = synsets.get(offset);
  if (!found) synsets.set(offset, (found = wordNet().seek(offset, 'n')));
  return found;
};

/** The one-word lemmas of the synsets `levels` steps above the term's first noun senses, with the level each is first met at (1 = the direct kind). */
export async function kindsOf(term: string, levels: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  // Letters and short words are other things' names too (`b`: vitamin B).
  if (term.length < 3) return out;
  let frontier = (await senses(term)).filter((s) => s.pos === 'n').slice(0, SENSES);
  for (let level = 1; level <= levels && frontier.length; level++) {
    frontier = await Promise.all(frontier.flatMap((s) => s.ptrs.filter((p) => HYPERNYM.has(p.pointerSymbol) && p.pos === 'n').map((p) => seek(p.synsetOffset))));
    for (const s of frontier) for (const lemma of s.synonyms) if (/^[a-z]{3,}$/i.test(lemma) && !out.has(lemma.toLowerCase())) out.set(lemma.toLowerCase(), level);
  }
  out.delete(term);
  return out;
}

/** What the query's words and two-word phrases (`animal shelter`) are kinds of, two levels up: word → level. */
export async function broaderWords(words: string[]): Promise<Map<string, number>> {
  const terms = [...words, ...words.slice(1).map((w, i) => `${words[i]}_${w}`)].filter((t) => t.length >= 3);
  const out = new Map<string, number>();
  for (const kinds of await Promise.all(terms.map((t) => kindsOf(t, 2)))) for (const [w, level] of kinds) out.set(w, Math.min(level, out.get(w) ?? level));
  for (const w of words) out.delete(w);
  return out;
}
