/**
 * `npm test` and `npm run test:quick`: the suite's files in lanes (three by default), each lane a mocha process of its
 * own with a whole test stack of its own (its own embedded Postgres on a free port, search process,
 * API, and a time-skipping Temporal server per file), so lanes share nothing but the tool cache
 * (read only, but for each lane's own search data directory: testSearchDataDir) and the machine.
 * Files are dealt to lanes longest first by their seconds in test/file-seconds.json (the last full
 * run's, written with TEST_TIMINGS_FILE), so the lanes end together; a file not there counts as
 * 10 s. Lane 1 prints as it goes; the others' output follows when each ends. Then the 15 slowest
 * files of all lanes, and one closing line, `N passed, N failed`.
 *
 *   node dist/test/lanes.js [--quick] [--lanes N] [files…]
 *
 * --quick: the inner loop: the files that boot no `npm start` stack, open no browser and run no
 * search or chaos load (QUICK_SKIPS says which and why), and none that took over
 * QUICK_FILE_SECONDS in the last full run (test/file-seconds.json): those run in `npm test`.
 * TEST_LANES sets the lanes (default LANES); files named on the command line run instead of all.
 */
import { spawn } from 'node:child_process';
import { existsSync, globSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

/**
 * Not in the inner loop, each for a reason: what boots its own `npm start`-shaped stack or dev
 * server, drives Chromium, or loads the search process or OpenSearch with thousands of names.
 */
const QUICK_SKIPS: Record<string, string> = {
  'test/chaos/chaos.test.ts': 'its own npm start, every part killed under load',
  'test/metrics/metrics.test.ts': 'its own npm start with tracing',
  'test/sdk/sdk.test.ts': 'packs and installs the SDK, against its own npm start',
  'test/main/supervise.test.ts': 'kills and restarts parts of its own',
  'test/main/image.test.ts': 'builds the production image layout',
  'test/auth/redis-admission.test.ts': "restarts npm start's Redis",
  'test/workflows/dev-server.test.ts': 'the Temporal dev server, its Schedules and UI',
  'test/pages/brokerage-progress.test.ts': 'Chromium',
  'test/pages/checkout.test.ts': 'Chromium',
  'test/checkout/stripe.test.ts': 'Chromium, and stripe-mock',
  'test/upgrade/upgrade.test.ts': "an earlier release's data in a database and worker of its own",
  'test/pages/crafted-requests.test.ts': 'Chromium',
  'test/pages/docs.test.ts': 'Chromium',
  'test/pages/limits.test.ts': 'Chromium',
  'test/pages/referral.test.ts': 'Chromium',
  'test/mail/onboarding.test.ts': 'Chromium, and Mailpit',
  'test/search/opensearch.test.ts': 'a local OpenSearch node',
  'test/search/search-process-graph.test.ts': 'a graph of 30,000 names saved in a search process',
  'test/search/search-process.test.ts': 'a graph of 12,000 names built in a search process',
  'test/search/index-sync.test.ts': 'graphs built over thousands of vectors',
  'test/search/hybrid-search.test.ts': 'the search quality set through the model',
};

/**
 * Three lanes on this project's 2-core machines: much of a lane's time is spent waiting (on
 * Temporal's timers and servers, child processes starting, a chaos run's deliveries), so two
 * lanes kept only ~1.25 cores busy on average (2026-12-02: 14 min of user CPU in 13.5 min), and a
 * third brought a warm run from 10.4 to 8.7 minutes.
 */
const LANES = 3;

/** A file slower than this in the last full run (three lanes beside each other) is left to `npm test`, so that the inner loop stays within two minutes. */
const QUICK_FILE_SECONDS = 20;

interface LaneResult {
  lane: number;
  code: number;
  output: string;
  timings?: { total: number; rootHooks: number; files: Record<string, number>; passes: number; failures: number; pending: number };
}

function args(): { quick: boolean; lanes: number; files: string[] } {
  const argv = process.argv.slice(2);
  let lanes = Number(process.env.TEST_LANES ?? LANES);
  const files: string[] = [];
  let quick = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--quick') quick = true;
    else if (argv[i] === '--lanes') lanes = Number(argv[++i]);
    else files.push(argv[i]!);
  }
  // The reference's examples are written by the run's one process (each lane would write its own answers only).
  if (process.env.EXAMPLES_WRITE === '1') lanes = 1;
  if (!Number.isInteger(lanes) || lanes < 1) throw new Error(`lanes: --lanes (or TEST_LANES) must be a whole number of at least 1, not ${lanes}`);
  return { quick, lanes, files };
}

/** The source path of a compiled test file (what file-seconds.json and QUICK_SKIPS name). */
const sourceOf = (file: string) => path.relative(root, file).replace(/^dist\//, '').replace(/\.js$/, '.ts');

/** Longest first, each to the lane with the least so far. */
export function deal(files: string[], seconds: Record<string, number>, lanes: number): string[][] {
  const out = Array.from({ length: lanes }, () => ({ files: [] as string[], total: 0 }));
  const cost = (f: string) => seconds[sourceOf(f)] ?? 10;
  for (const file of [...files].sort((a, b) => cost(b) - cost(a))) {
    const lane = out.reduce((least, l) => (l.total < least.total ? l : least));
    lane.files.push(file);
    lane.total += cost(file);
  }
  return out.map((l) => l.files).filter((l) => l.length > 0);
}

/**
 * Mocha's options for a lane: the project's .mocharc.json (hooks, timeout, reporter) without its
 * `spec`, which mocha would run beside the files named (it adds them, it does not replace them).
 */
function laneConfig(dir: string): string {
  const { spec: _all, ...options } = JSON.parse(readFileSync(path.join(root, '.mocharc.json'), 'utf8')) as Record<string, unknown>;
  const file = path.join(dir, 'mocharc.json');
  writeFileSync(file, JSON.stringify(options));
  return file;
}

/**
 * Node's on-disk cache of compiled modules, for every Node process of the run (mocha, the
 * command-line tools and `npm start` stacks the tests spawn): a process after the first loads its
 * modules without compiling them again. In the tool cache, unless NODE_COMPILE_CACHE names one.
 */
function compileCache(): string {
  return process.env.NODE_COMPILE_CACHE ?? path.join(process.env.TOOL_CACHE_DIR ?? path.join(root, '.tools'), 'node-compile-cache');
}

function runLane(lane: number, files: string[], live: boolean, config: string, timingsFile: string): Promise<LaneResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [require.resolve('mocha/bin/mocha.js'), '--config', config, ...files], {
      cwd: root,
      env: { ...process.env, NODE_COMPILE_CACHE: compileCache(), TEST_LANE: String(lane), TEST_TIMINGS_FILE: timingsFile, TEST_TIMINGS_QUIET: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: string[] = [];
    for (const stream of [child.stdout!, child.stderr!]) {
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        if (live) (stream === child.stdout ? process.stdout : process.stderr).write(chunk);
        else chunks.push(chunk);
      });
    }
    // 'close', not 'exit': the child's output may still be arriving when it exits.
    child.once('close', (code, signal) => {
      const timings = existsSync(timingsFile) ? (JSON.parse(readFileSync(timingsFile, 'utf8')) as LaneResult['timings']) : undefined;
      resolve({ lane, code: code ?? (signal ? 1 : 0), output: chunks.join(''), timings });
    });
  });
}

async function main(): Promise<void> {
  const { quick, lanes, files: named } = args();
  const all = named.length ? named.map((f) => path.resolve(f)) : globSync('dist/test/**/*.test.js', { cwd: root }).map((f) => path.join(root, f));
  const secondsFile = path.join(root, 'test/file-seconds.json');
  const seconds = existsSync(secondsFile) ? (JSON.parse(readFileSync(secondsFile, 'utf8')) as Record<string, number>) : {};
  const files = quick ? all.filter((f) => !(sourceOf(f) in QUICK_SKIPS) && (seconds[sourceOf(f)] ?? 0) <= QUICK_FILE_SECONDS) : all;
  const dealt = deal(files, seconds, lanes);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-lanes-'));
  const config = laneConfig(dir);
  const started = performance.now();
  process.stdout.write(`${files.length} test files in ${dealt.length} lane(s)${quick ? ` (quick: no npm start stacks, no browser, no search load, none over ${QUICK_FILE_SECONDS} s in the last full run)` : ''}; lane 1 prints as it goes, the others when each ends.\n`);
  const results = await Promise.all(
    dealt.map(async (laneFiles, i) => {
      const result = await runLane(i, laneFiles, i === 0, config, path.join(dir, `lane-${i}.json`));
      if (i > 0) process.stdout.write(`\n===== lane ${i + 1} (${laneFiles.length} files) =====\n${result.output}\n`);
      return result;
    }),
  );
  rmSync(dir, { recursive: true, force: true });
  const wall = (performance.now() - started) / 1000;
  const fileSeconds = Object.assign({}, ...results.map((r) => r.timings?.files ?? {})) as Record<string, number>;
  const rows = Object.entries(fileSeconds).sort((a, b) => b[1] - a[1]);
  const lines = [`The 15 slowest test files (of ${rows.length}; ${dealt.length} lane(s), ${wall.toFixed(0)} s in all; ${results.map((r) => `lane ${r.lane + 1} ${r.timings ? r.timings.total.toFixed(0) : '?'} s`).join(', ')}):`];
  for (const [file, s] of rows.slice(0, 15)) lines.push(`${s.toFixed(1).padStart(7)} s  ${file}`);
  process.stdout.write(`\n${lines.join('\n')}\n`);
  if (process.env.TEST_TIMINGS_FILE) {
    // Merged into what the file holds: a quick run, or a lane that crashed, leaves the other files' seconds as they were.
    const file = process.env.TEST_TIMINGS_FILE;
    const kept = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>) : {};
    const merged = { ...kept, ...Object.fromEntries(rows.map(([f, s]) => [f, Math.round(s * 10) / 10])) };
    writeFileSync(file, `${JSON.stringify(Object.fromEntries(Object.entries(merged).sort((a, b) => b[1] - a[1])), null, 2)}\n`);
  }
  const passed = results.reduce((n, r) => n + (r.timings?.passes ?? 0), 0);
  const failed = results.reduce((n, r) => n + (r.timings?.failures ?? 0), 0);
  const broken = results.filter((r) => r.code !== 0 && !r.timings?.failures);
  for (const r of broken) process.stdout.write(`lane ${r.lane + 1} exited ${r.code} without a test failing (a hook, the stack, or the closing reconcile): see its output above\n`);
  process.stdout.write(`\n${passed} passed, ${failed + broken.length} failed\n`);
  process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
}

if (require.main === module) {
  main().catch((err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(2);
  });
}
