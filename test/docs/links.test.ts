import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');

/** Every Markdown file of the documentation: the README, docs/ and the benchmarks' results. */
function documents(): string[] {
  const walk = (dir: string): string[] => readdirSync(dir).flatMap((f) => (statSync(path.join(dir, f)).isDirectory() ? walk(path.join(dir, f)) : f.endsWith('.md') ? [path.join(dir, f)] : []));
  return [path.join(root, 'README.md'), path.join(root, 'bench/RESULTS.md'), ...walk(path.join(root, 'docs'))];
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

/** The README is the front door (issue: a partner integrates in an afternoon); the rest lives under docs/. */
describe('the documentation’s links', () => {
  it('the README stays a front door: at most ~200 lines, linking every document under docs/', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    assert.ok(readme.split('\n').length <= 210, `README has ${readme.split('\n').length} lines`);
    for (const file of documents().filter((f) => f.includes(`${path.sep}docs${path.sep}`))) {
      assert.ok(readme.includes(`](${path.relative(root, file)})`), `the README links ${path.relative(root, file)}`);
    }
  });

  it('every relative link of every document leads to a file that exists, and to a heading of it when it names one', () => {
    const broken: string[] = [];
    for (const file of documents()) {
      const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^(https?:|mailto:)/.test(target) || target.startsWith('/')) continue;
        const [filePart, anchor] = target.split('#') as [string, string | undefined];
        const resolved = filePart ? path.resolve(path.dirname(file), filePart) : file;
        if (!existsSync(resolved)) broken.push(`${path.relative(root, file)}: ${target} (no such file)`);
        else if (anchor && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) broken.push(`${path.relative(root, file)}: ${target} (no such heading)`);
      }
    }
    assert.deepEqual(broken, []);
  });
});
