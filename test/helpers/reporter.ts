/**
 * The suite's reporter: mocha's spec reporter, and at the end the 15 slowest test files with
 * their seconds (each file's top-level suites from their first hook to their last), so the next
 * slowdown is seen the day it lands. The root hooks (the shared stack's boot and teardown) are
 * one line of their own. TEST_TIMINGS_FILE=<path> also writes every file's seconds there as JSON,
 * with the counts of passes and failures (test/lanes.ts reads it; TEST_TIMINGS_QUIET leaves the
 * printing to it).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import Mocha from 'mocha';

const { EVENT_RUN_BEGIN, EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END } = Mocha.Runner.constants;
const SHOWN = 15;

class TimedSpec extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    const seconds = new Map<string, number>();
    const started = new Map<Mocha.Suite, number>();
    let runStarted = 0;
    let inFiles = 0;
    runner.on(EVENT_RUN_BEGIN, () => (runStarted = performance.now()));
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.parent?.root && suite.file) started.set(suite, performance.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const from = started.get(suite);
      if (from === undefined || !suite.file) return;
      const s = (performance.now() - from) / 1000;
      inFiles += s;
      const file = path.relative(process.cwd(), suite.file).replace(/^dist\//, '').replace(/\.js$/, '.ts');
      seconds.set(file, (seconds.get(file) ?? 0) + s);
    });
    // After the spec reporter's own summary (registered first, so it prints first).
    runner.once(EVENT_RUN_END, () => {
      const total = (performance.now() - runStarted) / 1000;
      const rows = [...seconds].sort((a, b) => b[1] - a[1]);
      const lines = [`  The ${Math.min(SHOWN, rows.length)} slowest test files (of ${rows.length}; the whole run ${total.toFixed(0)} s, of which root hooks ${(total - inFiles).toFixed(0)} s):`];
      for (const [file, s] of rows.slice(0, SHOWN)) lines.push(`  ${s.toFixed(1).padStart(7)} s  ${file}`);
      if (!process.env.TEST_TIMINGS_QUIET) process.stdout.write(`\n${lines.join('\n')}\n\n`);
      if (process.env.TEST_TIMINGS_FILE) {
        const { passes = 0, failures = 0, pending = 0 } = runner.stats ?? {};
        writeFileSync(process.env.TEST_TIMINGS_FILE, JSON.stringify({ total, rootHooks: total - inFiles, files: Object.fromEntries(rows), passes, failures, pending }, null, 2) + '\n');
      }
    });
  }
}

export = TimedSpec;
