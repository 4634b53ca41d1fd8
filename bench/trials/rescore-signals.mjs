// Trial tool: ranks a `SIGNALS=file npm run search:quality` dump again with the scorer's
// constants as arguments (the shape of `rerank` in src/search/hybrid-search.ts), and prints
// nDCG@5 (against the inventory's ideal, as search:quality) and @10 / @20 (against the
// candidates' own best grades) per kind, for one half.
//   node bench/trials/rescore-signals.mjs dump.json tune
//   POINTS='[{"lo":0.15,"span":0.55,"ex":0.3,"br":0.6,"pen":0.05}]' node … dump.json tune
// `bw` is the best view's share (0.5 unless given). Without POINTS it searches a grid of the constants and prints the best few by nDCG@5.
import { readFileSync } from 'node:fs';

const [file, split = 'tune'] = process.argv.slice(2);
const dump = JSON.parse(readFileSync(file, 'utf8'));
const dcg = (g) => g.reduce((s, x, i) => s + (2 ** x - 1) / Math.log2(i + 2), 0);
const squash = (r) => (r <= 0.8 ? Math.max(0, r) : 0.8 + 0.2 * Math.tanh((r - 0.8) / 0.2));
function score(s, p) {
  const direct = Math.max(s.name, s.word);
  const gloss = Math.max(s.glossName, s.glossWord);
  const views = [direct, gloss, s.sense].filter((v, i) => i === 0 || v !== 0);
  const best = Math.max(direct, gloss - p.pen, s.sense - p.pen);
  const share = p.bw ?? 0.5;
  const meaning = share * best + ((1 - share) * views.reduce((a, b) => a + b, 0)) / views.length;
  const semantic = Math.min(1, Math.max(0, (meaning + p.ex * s.expansion + p.br * s.broader - p.lo) / p.span));
  return squash(Math.max(s.keyword, 0.5 * s.keyword + 0.55 * semantic + 0.15 * s.keyword * semantic) + (s.available ? 0.01 : 0));
}
function run(p, k = 5) {
  const byKind = {};
  for (const q of dump) {
    if (q.split !== split) continue;
    const ranked = q.candidates.map((c) => ({ c, s: score(c, p) })).filter((x) => x.s >= 0.18).sort((a, b) => b.s - a.s || a.c.domain.length - b.c.domain.length);
    const ideal = k === 5 ? q.ideal : q.candidates.map((c) => c.grade).sort((a, b) => b - a).slice(0, k);
    (byKind[q.kind] ||= []).push(dcg(ideal) ? dcg(ranked.slice(0, k).map((x) => x.c.grade)) / dcg(ideal) : 0);
  }
  return Object.fromEntries(Object.entries(byKind).map(([kind, v]) => [kind, +(v.reduce((a, b) => a + b, 0) / v.length).toFixed(3)]));
}
const report = (p) => console.log(JSON.stringify(p), ...[5, 10, 20].map((k) => `@${k} ${JSON.stringify(run(p, k))}`));
if (process.env.POINTS) {
  for (const p of JSON.parse(process.env.POINTS)) report(p);
} else {
  const grid = [];
  // The 1,296 settings of README's dev-half trial (4 × 3 × 4 × 3 × 3 × 3).
  for (const lo of [0.1, 0.15, 0.2, 0.3]) for (const span of [0.4, 0.55, 0.7]) for (const ex of [0, 0.1, 0.2, 0.3]) for (const br of [0, 0.3, 0.6]) for (const pen of [0, 0.05, 0.1]) for (const bw of [0.25, 0.5, 0.75]) grid.push({ lo, span, ex, br, pen, bw });
  const total = (r) => Object.values(r).reduce((a, b) => a + b, 0);
  const scored = grid.map((p) => ({ p, r: run(p) })).sort((a, b) => total(b.r) - total(a.r));
  for (const { p } of scored.slice(0, 5)) report(p);
}
