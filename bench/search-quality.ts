/**
 * `npm run search:quality`: nDCG@5 per query kind (literal, meaning, typo) and per split (tune,
 * holdout) of the hybrid search and of the keyword ranker alone, over the sandbox inventory,
 * with the labelled queries in data/search-queries.json: each query lists graded terms (3 what
 * was asked, 2 on-topic, 1 related), and a name's grade is the highest grade of a term in its
 * label. Uses the dev stack's database (or DATABASE_URL), with the sandbox inventory imported as
 * `npm start` imports it (so a fresh clone needs no start first); VERBOSE=1 prints every query;
 * SIGNALS=file writes every query's candidates with their words, signals and grades, for tuning the scorer.
 *
 * Then the hybrid search's candidates (what its scorer sees), per kind and split: `missed`, the
 * queries none of whose best-graded names is a candidate at all (no scorer can fix those), and
 * `ceiling`, the nDCG@5 of the best five candidates by grade (what a perfect scorer would reach).
 *
 * data/search-queries-dev.json, when present, adds a `dev` half of meaning queries from a second
 * judge, for choosing on more than `tune`'s 20; it is printed on its own rows and counts in no
 * other figure. HALVES=tune,dev prints only those halves (no row that holds `holdout`), so that
 * experiments need not glimpse the half that is reported.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { importSandboxInventory } from '../src/discovery/inventory';
import { KeywordSearch, type DomainSearch } from '../src/discovery/search';
import { openProjectDatabase } from '../src/main/runtime';
import { startSearch } from '../src/main/services';

interface LabelledQuery {
  kind: string;
  q: string;
  split: string;
  terms: Record<string, number>;
}

export function grade(name: string, query: LabelledQuery): number {
  const label = name.slice(0, name.indexOf('.'));
  let best = 0;
  for (const [term, g] of Object.entries(query.terms)) if (label.includes(term)) best = Math.max(best, g);
  return best;
}

function dcg(grades: number[]): number {
  return grades.reduce((sum, g, i) => sum + (2 ** g - 1) / Math.log2(i + 2), 0);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function main(): Promise<void> {
  const config = loadConfig();
  const read = (file: string) => (JSON.parse(readFileSync(path.join(config.projectRoot, 'data', file), 'utf8')) as { queries: LabelledQuery[] }).queries;
  const devFile = path.join(config.projectRoot, 'data', 'search-queries-dev.json');
  const queries = [...read('search-queries.json'), ...(existsSync(devFile) ? read('search-queries-dev.json') : [])];
  const halves = process.env.HALVES ? process.env.HALVES.split(',') : ['tune', 'holdout', ...(existsSync(devFile) ? ['dev'] : [])];
  const showAll = halves.includes('tune') && halves.includes('holdout');
  // The figures a query counts in: `dev` queries only in their own.
  const keysOf = (query: LabelledQuery) => (query.split === 'dev' ? ['dev', `dev ${query.kind}`] : ['all', query.kind, query.split, `${query.split} ${query.kind}`]);
  const shown = (query: LabelledQuery) => halves.includes(query.split);
  const { dataSource, postgres } = await openProjectDatabase(config, () => undefined);
  await importSandboxInventory(dataSource, config.projectRoot);
  const rows = (await dataSource.query(`SELECT name FROM domains WHERE environment = 'sandbox' AND status IN ('listed', 'reserved')`)) as Array<{ name: string }>;
  const hybrid = await startSearch(config, dataSource, (m) => process.stderr.write(`${m}\n`), ['sandbox']);
  const idealOf = (query: LabelledQuery) => rows.map((r) => grade(r.name, query)).sort((a, b) => b - a).slice(0, 5);
  const dump = [];
  const missed = new Map<string, number[]>();
  const ceiling = new Map<string, number[]>();
  for (const query of queries) {
    const candidates = await hybrid.candidates('sandbox', query.q);
    const grades = candidates.map((c) => grade(c.entry.name, query));
    const ideal = idealOf(query);
    const best = grades.sort((a, b) => b - a).slice(0, 5);
    for (const key of keysOf(query)) {
      missed.set(key, [...(missed.get(key) ?? []), ideal[0] > 0 && best[0] !== ideal[0] ? 1 : 0]);
      ceiling.set(key, [...(ceiling.get(key) ?? []), dcg(ideal) ? dcg(best) / dcg(ideal) : 0]);
    }
    if (process.env.VERBOSE && shown(query) && ideal[0] > 0 && best[0] !== ideal[0]) process.stdout.write(`missed ${query.split} ${query.kind} ${query.q}: best candidate grade ${best[0]} of ${ideal[0]}\n`);
    if (process.env.SIGNALS && shown(query)) dump.push({ ...query, ideal, candidates: candidates.map((c) => ({ ...c.signals, domain: c.entry.name, words: c.entry.words, grade: grade(c.entry.name, query) })) });
  }
  if (process.env.SIGNALS) writeFileSync(process.env.SIGNALS, JSON.stringify(dump));
  const rankers: Record<string, DomainSearch> = { hybrid, keyword: new KeywordSearch(dataSource) };
  for (const [label, ranker] of Object.entries(rankers)) {
    const results = new Map<string, number[]>();
    const add = (key: string, v: number) => results.set(key, [...(results.get(key) ?? []), v]);
    for (const query of queries) {
      const hits = await ranker.search('sandbox', query.q, 5);
      const got = hits.map((h) => grade(h.name, query));
      const ideal = idealOf(query);
      const ndcg = dcg(ideal) ? dcg(got) / dcg(ideal) : 0;
      for (const key of keysOf(query)) add(key, ndcg);
      if (process.env.VERBOSE && shown(query)) process.stdout.write(`${label} ${query.split} ${query.kind} ${query.q}: ${ndcg.toFixed(3)} ${hits.map((h, i) => `${h.name}(${got[i]})`).join(' ')}\n`);
    }
    const row = (keys: string[]) => keys.filter((k) => results.has(k)).map((k) => `${k} ${mean(results.get(k)!).toFixed(3)}`).join('  ');
    process.stdout.write(`${label.padEnd(8)} nDCG@5 ${showAll ? row(['all', 'literal', 'meaning', 'typo']) : ''}\n`);
    for (const split of halves) process.stdout.write(`${''.padEnd(8)} ${split.padEnd(7)} ${row([split, `${split} literal`, `${split} meaning`, `${split} typo`])}\n`);
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const cells = (keys: string[]) => keys.filter((k) => missed.has(k)).map((k) => `${k} ${sum(missed.get(k)!)}/${missed.get(k)!.length} ${mean(ceiling.get(k)!).toFixed(3)}`).join('  ');
  process.stdout.write(`candidates (best-graded name missed: queries / all; ceiling nDCG@5 of a perfect scorer)\n`);
  if (showAll) process.stdout.write(`${''.padEnd(8)} ${'all'.padEnd(7)} ${cells(['all', 'literal', 'meaning', 'typo'])}\n`);
  for (const split of halves) process.stdout.write(`${''.padEnd(8)} ${split.padEnd(7)} ${cells([split, `${split} literal`, `${split} meaning`, `${split} typo`])}\n`);
  await dataSource.destroy();
  await postgres.stop();
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`search-quality: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
