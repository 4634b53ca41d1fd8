/**
 * `node dist/bench/generate-names.js N > names.csv`: N distinct synthetic listings in the
 * inventory CSV format (two common English words + a TLD), for scale tests of search:
 *   npm run --silent admin -- inventory import --env live --file names.csv
 * Deterministic for a given N (seeded), so a cached embedding/index is reused across runs.
 */
import { readFileSync } from 'node:fs';

const n = Number(process.argv[2] ?? 1_000_000);
const words = (JSON.parse(readFileSync(require.resolve('wordsninja/words-en.json'), 'utf8')) as string[])
  .filter((w) => /^[a-z]{3,9}$/.test(w))
  .slice(0, 20_000);
const tlds = ['com', 'io', 'net', 'co', 'ai', 'app', 'org', 'shop', 'dev'];
const categories = ['auto', 'business', 'education', 'energy-and-environment', 'entertainment', 'fashion-and-beauty', 'finance', 'food-and-drink', 'health', 'home', 'pets', 'technology', 'travel'];

// mulberry32: a small seeded generator in 32-bit integer arithmetic.
let seed = 42;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];

const seen = new Set<string>();
const out: string[] = ['name,tld,category,buy_now_price_cents,floor_price_cents,currency,status,active_site,registered_year'];
while (seen.size < n) {
  const tld = pick(tlds);
  const name = `${pick(words)}${pick(words)}.${tld}`;
  if (name.length > 40 || seen.has(name)) continue;
  seen.add(name);
  const price = (50 + Math.floor(random() * 2000)) * 1000 - 500;
  out.push(`${name},${tld},${pick(categories)},${price},${Math.floor(price * 0.7)},USD,listed,false,${1995 + Math.floor(random() * 30)}`);
  if (out.length >= 10_000) {
    process.stdout.write(out.join('\n') + '\n');
    out.length = 0;
  }
}
process.stdout.write(out.length ? out.join('\n') + '\n' : '');
