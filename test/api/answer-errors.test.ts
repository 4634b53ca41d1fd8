import assert from 'node:assert/strict';
import { createApp } from '../../src/api/app';
import { createLogger } from '../../src/logger';
import { searchApp, type SearchEngine } from '../../src/search/search-server';
import { getStack } from '../helpers/stack';

/** A client that goes away before its answer is written is a log line, never a stack on stderr. */
describe('errors Koa meets after the middleware (a client gone, an error above the mapping)', () => {
  const gone = () => Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });

  /** Runs `emit` with console.error captured, and returns what it printed. */
  function printed(emit: () => void): unknown[][] {
    const calls: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void calls.push(args);
    try {
      emit();
    } finally {
      console.error = original;
    }
    return calls;
  }

  it('the API logs a client gone at debug and another error at error level, and Koa prints neither', () => {
    const lines: Array<{ level: number; msg: string; err?: { message: string } }> = [];
    const logger = createLogger('debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
    const app = createApp({ ...getStack().appDeps, logger });
    app.callback(); // where Koa installs its printing handler when no other listens
    assert.deepEqual(printed(() => {
      app.emit('error', gone());
      app.emit('error', new Error('broken'));
    }), []);
    const [first, second] = lines.filter((l) => l.err);
    assert.equal(first.level, 20);
    assert.match(first.msg, /went away/);
    assert.equal(second.level, 50);
    assert.equal(second.err?.message, 'broken');
  });

  it('the search process ignores a client gone and logs another error', () => {
    const logged: string[] = [];
    const engine: SearchEngine = { search: async () => [], status: () => ({ names: 0, pendingVectors: 0, vectorIndex: 'exact', building: false, searchesThatRead: 0 }), save: async () => undefined };
    const app = searchApp(engine, ['sandbox'], (m) => logged.push(m));
    app.callback();
    assert.deepEqual(printed(() => {
      app.emit('error', gone());
      app.emit('error', new Error('broken'));
    }), []);
    assert.equal(logged.length, 1);
    assert.match(logged[0], /an answer failed: Error: broken/);
  });
});
