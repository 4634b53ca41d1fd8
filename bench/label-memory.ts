/**
 * `npm run bench:labels [-- N]`: the memory of the embedded engine's keyword index (LabelIndex)
 * over N generated names (bench/generate-names.ts, default 1,000,000), alone in this process:
 * the heap and the typed arrays it holds once built, in bytes per name, and how long adding the
 * names took. Run with the collector exposed (the npm script does), so the figures are after a
 * full collection. Measures, never asserts.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { LabelIndex } from '../src/search/label-index';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:labels does)');
const n = Number(process.argv[2] ?? 1_000_000);
const csv = execFileSync(process.execPath, [path.join(__dirname, 'generate-names.js'), String(n)], { maxBuffer: 1 << 30 }).toString();
const rows = csv
  .trim()
  .split('\n')
  .slice(1)
  .map((line) => {
    const [name, tld, category] = line.split(',');
    // A label of its own (not a slice of the file's text, which would keep the file alive).
    return { name, label: name.slice(0, name.length - tld.length - 1).split('').join(''), category };
  });
const slots = new Map(rows.map((r, slot) => [r.name, slot]));
const settle = () => {
  gc();
  gc();
  return process.memoryUsage();
};
const before = settle();
const index = new LabelIndex((name) => slots.get(name), new Set(['a', 'an', 'and', 'the', 'of']));
const started = process.hrtime.bigint();
rows.forEach((r, slot) => index.add(slot, r.name, r.category));
// As the engine does once its first read of the market is done.
index.trim();
const loadMs = Number(process.hrtime.bigint() - started) / 1e6;
const after = settle();
const heap = after.heapUsed - before.heapUsed;
const arrays = after.arrayBuffers - before.arrayBuffers;
const perName = (bytes: number) => (bytes / rows.length).toFixed(0);
process.stdout.write(
  `${rows.length} names: LabelIndex heap ${(heap / 2 ** 20).toFixed(1)} MiB (${perName(heap)} B a name), typed arrays ${(arrays / 2 ** 20).toFixed(1)} MiB (${perName(arrays)} B a name), ` +
    `${perName(heap + arrays)} B a name in all; added and trimmed in ${(loadMs / 1000).toFixed(1)} s; a search of it: ${index.search(['coffee'], 5, {}, (slot) => ({ name: rows[slot].name, available: true })).length} hits\n`,
);
