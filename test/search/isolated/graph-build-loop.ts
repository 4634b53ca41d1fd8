/**
 * The graph-build event-loop test, run by test/search/index-sync.test.ts in a process of its own
 * (a Node process with nothing else on its main thread; not part of the suite's glob, no stack).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import type { Embedder } from '../../../src/search/embedder';
import { EmbeddingCache } from '../../../src/search/embedding-cache';
import { entryText, graphFileName, InventoryIndex } from '../../../src/search/inventory-index';
import { MODEL_ID } from '../../../src/search/model-files';
import { HnswIndex, VectorStore } from '../../../src/search/vector-index';
import { cpuSince, FakeEmbedder } from '../../helpers/search-fakes';

describe('search index: an HNSW graph built off the event loop', () => {
  it('an HNSW graph is built off the event loop: the exact index answers meanwhile, the main thread runs under half of the process\'s CPU during the build (on the loop: all of it), changes made during the build are in the graph', async function () {
    this.timeout(180_000);
    // A stand-in inventory that, after the first read, answers only with the rows changed since
    // the previous sync (as the xid horizon does), so the syncs during the build are small.
    const rows = new Map<string, string>();
    const changed = new Set<string>();
    const label = (i: number) => {
      let s = '';
      for (let n = i + 26 * 26; n > 0; n = Math.floor(n / 26)) s += String.fromCharCode(97 + (n % 26));
      return `graph${s}`;
    };
    const dataSource = {
      query: async (_sql: string, params: unknown[]) => {
        // Answered in a later turn of the event loop, as a database's answer comes.
        await new Promise((resolve) => setImmediate(resolve));
        const first = params.length === 2;
        const after = String(params[1]);
        const names = [...(first ? rows.keys() : changed)].filter((n) => n > after).sort().slice(0, 20_000);
        // Read to the end: the next sync sees only the rows changed after this one.
        if (names.length < 20_000) changed.clear();
        const out = names.map((name) => ({ horizon: '1', name, label: name.slice(0, name.indexOf('.')), category: 'general', status: rows.get(name)!, buy_now_price_cents: '100000', currency: 'USD' }));
        return out.length ? out : [{ horizon: '1', name: null, label: null, category: null, status: null, buy_now_price_cents: null, currency: null }];
      },
    } as unknown as DataSource;
    const list = (name: string, status = 'listed') => {
      rows.set(name, status);
      changed.add(name);
    };
    // Large enough that building its graph takes seconds of CPU (3.2 s on the loop of our 2-core
    // machine). With the build in the worker, the main thread runs only the build's start, a turn
    // per chunk of 2,000 vectors, mapping the graph and this test's own syncs and searches.
    const N = 12_000;
    for (let i = 0; i < N; i++) list(`${label(i)}.com`);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'graph-build-'));
    // An earlier release's graph (another format, or none in the name), and files that are no graph of this environment's.
    const former = [`live-${MODEL_ID}.usearch.mx1old`, `live-${MODEL_ID}.usearch.names.json`, `live-${MODEL_ID}.f16-m16.usearch.mx1old`];
    const others = [`live-${MODEL_ID}.log`, `sandbox-${MODEL_ID}.usearch.mx1old`];
    for (const file of [...former, ...others]) writeFileSync(path.join(dir, file), 'x');
    const logs: string[] = [];
    const index = new InventoryIndex('live', dataSource, new FakeEmbedder() as unknown as Embedder, new EmbeddingCache(), (m) => logs.push(m), dir, { annThreshold: N });
    try {
      await index.load();
      assert.equal(index.vectorIndexKind, 'exact');

      // One more name takes it over the threshold: the build starts when its vector is in.
      // No 1 ms loop watch here: its own ticks would be most of the main thread's CPU.
      const cpuBefore = cpuSince();
      list('graphfirstover.com');
      await index.refresh();
      assert.equal(index.pendingVectors, 0);
      assert.equal(index.vectorIndexKind, 'exact', 'the graph is still being built');
      const building = index.graphBuilt();

      // Meanwhile: a sale and two new names, seen by the exact index at once.
      const sold = index.slot(`${label(5)}.com`)!;
      const soldText = entryText(index.slots[sold]!);
      const soldVector = FakeEmbedder.vector(soldText);
      list(`${label(5)}.com`, 'sold');
      list('graphduringbuild.com');
      list('graphalsoduring.com');
      await index.refresh();
      assert.equal(index.pendingVectors, 0);
      const during = index.slot('graphduringbuild.com')!;
      const duringVector = FakeEmbedder.vector(entryText(index.slots[during]!));
      assert.equal(index.vectorIndexKind, 'exact', 'the graph is still being built');
      assert.deepEqual(await index.nearest(duringVector, 1), [during]);
      assert.ok(!(await index.nearest(soldVector, 10)).includes(sold));

      await building;
      const cpu = cpuSince(cpuBefore);
      const loop = `CPU ${cpu.main.toFixed(0)} ms on the main thread of ${cpu.all.toFixed(0)} ms in all`;
      assert.equal(index.vectorIndexKind, 'hnsw', logs.join('\n'));
      // Where the build ran, whatever the machine's speed: in the worker, the main thread's share
      // of the process's CPU is its own turns and this test's (a tenth or less); on the loop, all.
      assert.ok(cpu.main < cpu.all / 2, `during the build: ${loop}`);

      // The graph holds the changes made while it was built.
      assert.equal(index.size, N + 2);
      const hits = await index.nearest(duringVector, 1);
      assert.deepEqual(hits, [during]);
      const also = index.slot('graphalsoduring.com')!;
      assert.deepEqual(await index.nearest(FakeEmbedder.vector(entryText(index.slots[also]!)), 1), [also]);
      assert.ok(!(await index.nearest(soldVector, 50)).includes(sold), 'a name sold during the build is not in the graph');
      const sample = Array.from({ length: 20 }, (_, i) => index.slot(`${label(i * 577)}.com`)!).filter((s) => s !== sold);
      const found = (await Promise.all(sample.map(async (s) => (await index.nearest(FakeEmbedder.vector(entryText(index.slots[s]!)), 1))[0] === s))).filter(Boolean).length;
      assert.ok(found >= sample.length - 1, `nearest to its own vector for ${found} of ${sample.length}`);

      // Saved by the worker: each slot as it was when its chunk was filled (the sold name's slot,
      // changed after the build began, either way: the graph in use hides it), each of the graph's
      // entries named with the name its vector was written for.
      const saved = await HnswIndex.load(path.join(dir, graphFileName('live')), new VectorStore());
      assert.ok(saved, 'the graph built in the worker is saved and loads');
      assert.equal(saved.index.size, saved.names.filter((n) => n !== null).length);
      assert.ok(saved.index.size >= N && saved.index.size <= N + 1, `${saved.index.size} names saved`);
      const soldSlotSaved = saved.names[sold];
      assert.ok(soldSlotSaved === null || [`${label(5)}.com`, 'graphduringbuild.com', 'graphalsoduring.com'].includes(soldSlotSaved[0]), JSON.stringify(soldSlotSaved));
      if (soldSlotSaved) assert.deepEqual(await saved.index.nearest(FakeEmbedder.vector(soldSlotSaved[1]), 1), [sold], 'the slot is saved with its own vector');
      saved.index.close();
      // Once the graph of this format is in use, those saved another way are gone; nothing else is.
      const left = readdirSync(dir);
      assert.deepEqual(former.filter((f) => left.includes(f)), [], left.join(' '));
      assert.deepEqual(others.filter((f) => !left.includes(f)), [], left.join(' '));
      console.log(`      (during the build: ${loop}; ${logs.filter((l) => l.includes('in use')).join('')})`);

      // Most names delisted: a save that removes more than it adds writes the graph whole, because
      // a saved graph with usearch's tombstones left corrupts its heap when it is mapped or loaded
      // (with the changes applied to the saved graph, this aborted the process here).
      for (let i = 0; i < 10_000; i++) list(`${label(i)}.com`, 'sold');
      await index.refresh();
      await index.save();
      assert.ok(logs.some((l) => l.includes('written whole')), logs.join('\n'));
      const shrunk = await HnswIndex.load(path.join(dir, graphFileName('live')), new VectorStore());
      assert.ok(shrunk, 'the graph saved after the delisting maps');
      assert.equal(shrunk.index.size, index.size);
      shrunk.index.close();
      assert.ok(index.size < 2_100);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
