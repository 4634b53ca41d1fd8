/** Stand-ins and event-loop measurement shared by the search index tests. */
import { existsSync, readFileSync } from 'node:fs';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { setImmediate } from 'node:timers/promises';
import { DIMENSIONS } from '../../src/search/embedder';

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random unit vector of DIMENSIONS (Gaussian components, normalised). */
export function unitVector(random: () => number): Float32Array {
  const v = new Float32Array(DIMENSIONS);
  let norm = 0;
  for (let d = 0; d < DIMENSIONS; d++) {
    const g = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    v[d] = g;
    norm += g * g;
  }
  norm = Math.sqrt(norm);
  for (let d = 0; d < DIMENSIONS; d++) v[d] /= norm;
  return v;
}

export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let d = 0; d < a.length; d++) s += a[d] * b[d];
  return s;
}

/** A brute force's answer: the slots by their vector's dot product with `query`, best first (the first `k` when given). */
export function byDot(slots: Iterable<number>, vectorOf: (slot: number) => ArrayLike<number>, query: ArrayLike<number>, k?: number): number[] {
  const ranked = [...slots].map((slot): [number, number] => [slot, dot(vectorOf(slot), query)]).sort((a, b) => b[1] - a[1]);
  return ranked.slice(0, k ?? ranked.length).map(([slot]) => slot);
}

/**
 * The main thread's CPU time and the whole process's (every thread's), in ms, from `since` (an
 * earlier reading) on: a step of the index run on the main thread shows in the first, one run in a
 * worker only in the second. Their ratio says where the work ran, whatever the machine's speed.
 */
export function cpuSince(since?: { main: number; all: number }): { main: number; all: number } {
  const usage = process.cpuUsage();
  const now = { main: mainThreadRanMs(), all: (usage.user + usage.system) / 1000 };
  return since ? { main: now.main - since.main, all: now.all - since.all } : now;
}

/** How long this process's main thread has run, in ms (Linux's schedstat: its time on a CPU). */
export function mainThreadRanMs(): number {
  const schedstat = `/proc/${process.pid}/task/${process.pid}/schedstat`;
  return existsSync(schedstat) ? Number(readFileSync(schedstat, 'utf8').split(' ')[0]) / 1e6 : NaN;
}

/**
 * An unrelated request's wait, seen by a 1 ms timer: how many turns of the loop it saw, the longest gap between its ticks (past its
 * 1 ms); and the longest time the main thread ran within one gap (the gap's length at most),
 * besides its own garbage collections. A gap is also time the thread waited for a CPU, which a
 * busy machine (the suite runs at nice 19 beside other work) makes long whatever runs on the
 * loop; and a collection's pause comes with the whole process's heap (the suite's), whatever the
 * index does. What the thread ran besides is what a step of the index on the loop shows.
 */
export function loopWatch(): { stop(): void; turns(): number; longest(): number; longestRan(): { ran: number; besidesGc: number; gc: number } } {
  let turns = 0;
  let last = performance.now();
  let lastRan = mainThreadRanMs();
  let maxGap = 0;
  const gaps: Array<[number, number, number]> = [];
  const gcs: Array<[number, number]> = [];
  const gcObserver = new PerformanceObserver((list) => list.getEntries().forEach((e) => gcs.push([e.startTime, e.startTime + e.duration])));
  gcObserver.observe({ entryTypes: ['gc'] });
  const tick = () => {
    turns++;
    const [now, ran] = [performance.now(), mainThreadRanMs()];
    maxGap = Math.max(maxGap, now - last - 1);
    if (ran - lastRan > 1) gaps.push([last, now, Math.min(now - last - 1, ran - lastRan)]);
    [last, lastRan] = [now, ran];
  };
  const ticker = setInterval(tick, 1);
  return {
    stop: () => {
      clearInterval(ticker);
      tick();
      gcObserver.disconnect();
    },
    turns: () => turns,
    longest: () => maxGap,
    longestRan: () => {
      const gcIn = (a: number, b: number) => gcs.reduce((sum, [c, d]) => sum + Math.max(0, Math.min(b, d) - Math.max(a, c)), 0);
      return {
        ran: Math.max(0, ...gaps.map(([, , ran]) => ran)),
        besidesGc: Math.max(0, ...gaps.map(([a, b, ran]) => ran - gcIn(a, b))),
        gc: Math.max(0, ...gcs.map(([c, d]) => d - c)),
      };
    },
  };
}

/** Embeds a text as a unit vector seeded by its hash: deterministic, instant, no model. */
export class FakeEmbedder {
  gate: Promise<void> | undefined;
  calls: string[][] = [];
  static vector(text: string): Float32Array {
    let h = 2166136261;
    for (const c of text) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
    return unitVector(seeded(h));
  }
  async embed(texts: string[]): Promise<Float32Array[]> {
    return this.embedAll(texts);
  }
  async embedAll(texts: string[]): Promise<Float32Array[]> {
    this.calls.push(texts);
    await this.gate;
    // The model runs off the main thread (onnxruntime's own threads): the stand-in gives the loop
    // back every 100 texts, so that its own work is not counted against the index's turns.
    const vectors: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += 100) {
      if (i > 0) await setImmediate();
      for (const t of texts.slice(i, i + 100)) vectors.push(FakeEmbedder.vector(t));
    }
    return vectors;
  }
}

/** A vector as the embedding cache keeps it in memory (VectorRows): each component to the nearest 1/32,767. */
export const asKept = (v: Float32Array): Float32Array => Float32Array.from(v, (x) => (Math.max(-32_767, Math.min(32_767, Math.round(x * 32_767))) | 0) / 32_767);
