/**
 * Builds an HNSW graph off the API's event loop (a worker thread): takes the vectors in chunks
 * (`add`, their buffers transferred), adds each with all cores, and on `save` writes the graph
 * to the given file and replies with it; the API thread loads it and swaps it in.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createHnsw, type BuildReply, type BuildRequest } from './hnsw';

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
