/**
 * Writes HNSW graphs off the search process's event loop (a worker thread, one per graph written):
 * either a new graph from the vectors it is given (a build), or the saved graph loaded from disk
 * with the changes made since applied to it (a periodic save). It then saves the graph under a new
 * name and writes the names file that names it, and replies with the file; the search worker
 * (hnsw-search-worker.ts) then maps it read-only and searches it. So neither a build, nor loading
 * a graph to update it, nor writing it runs on the event loop that answers searches.
 *
 * The thread runs at the lowest CPU priority (nice 19; on Linux a thread's own, inherited by the
 * threads usearch starts for each `add`), so that it takes only the CPU nothing else on the host
 * wants: without it, on 2 cores, an API process's event loop waited up to 141 ms during a build
 * in the search process (test/search/search-process.test.ts).
 */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { commitGraph, membersOf, newGraphFile, readNames, type SlotNames } from './graph-files';
import { createHnsw, type BuildReply, type BuildRequest } from './hnsw';

/** Lowest priority: the worker uses idle CPU only. */
const BUILD_NICE = 19;

try {
  os.setPriority(0, BUILD_NICE);
} catch {
  // Not permitted or not supported here: the worker runs at the process's priority.
}

const port = parentPort!;
const index = createHnsw((workerData as { dimensions: number }).dimensions);
/** The names of the graph's slots, as the names file will hold them. */
let names: SlotNames = [];
// The saved graph's members (1 MB at 1M slots) are handed over, not copied.
const reply = (message: BuildReply) => port.postMessage(message, message.type === 'saved' ? [message.members.buffer as ArrayBuffer] : []);

function handle(request: BuildRequest): BuildReply {
  switch (request.type) {
    case 'load': {
      const saved = readNames(request.file);
      if (saved?.graph !== request.graph) throw new Error(`the names file of ${request.file} does not name ${request.graph}`);
      index.load(saved.graph);
      if (Number(index.size()) !== saved.size) throw new Error(`${saved.graph} holds ${index.size()} vectors, its names file ${saved.size}`);
      names = saved.names;
      return { type: 'done', size: Number(index.size()) };
    }
    case 'remove':
      for (const slot of request.slots) {
        const key = BigInt(slot);
        if (index.contains(key)) index.remove(key);
        names[slot] = null;
      }
      return { type: 'done', size: Number(index.size()) };
    case 'add':
      index.add(request.keys, request.vectors, 0);
      request.names.split('\n').forEach((entry, i) => {
        const tab = entry.indexOf('\t');
        names[Number(request.keys[i])] = [entry.slice(0, tab), entry.slice(tab + 1)];
      });
      return { type: 'done', size: Number(index.size()) };
    case 'save': {
      const graph = newGraphFile(request.file);
      index.save(graph);
      const size = Number(index.size());
      // Slots past the last name, or never named (a hole), are free.
      commitGraph(request.file, graph, size, Array.from(names, (n) => n ?? null), request.keep);
      return { type: 'saved', graph, size, members: membersOf(names) };
    }
  }
}

port.on('message', (request: BuildRequest) => {
  try {
    reply(handle(request));
  } catch (err) {
    reply({ type: 'error', message: (err as Error).message });
  }
});
