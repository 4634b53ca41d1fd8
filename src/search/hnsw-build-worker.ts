/**
 * Builds an HNSW graph off the search process's event loop (a worker thread): takes the vectors
 * in chunks (`add`, their buffers transferred), adds each with all cores, and on `save` writes
 * the graph to the given file and replies with it; the main thread loads it and swaps it in.
 *
 * The thread runs at the lowest CPU priority (nice 19; on Linux a thread's own, inherited by the
 * threads usearch starts for each `add`), so that a build takes only the CPU nothing else on
 * the host wants: without it, on 2 cores, an API process's event loop waited up to 141 ms
 * during a build in the search process (test/search/search-process.test.ts).
 */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createHnsw, type BuildReply, type BuildRequest } from './hnsw';

/** Lowest priority: a build uses idle CPU only. */
const BUILD_NICE = 19;

try {
  os.setPriority(0, BUILD_NICE);
} catch {
  // Not permitted or not supported here: the build runs at the process's priority.
}

const port = parentPort!;
const index = createHnsw((workerData as { dimensions: number }).dimensions);
const reply = (message: BuildReply) => port.postMessage(message);

port.on('message', (request: BuildRequest) => {
  try {
    if (request.type === 'add') {
      index.add(request.keys, request.vectors, 0);
      reply({ type: 'added', size: Number(index.size()) });
    } else {
      index.save(request.file);
      reply({ type: 'saved', file: request.file, size: Number(index.size()) });
    }
  } catch (err) {
    reply({ type: 'error', message: (err as Error).message });
  }
});
