/**
 * Maps the HNSW graph in use read-only (usearch `view`) and searches it, off the search process's
 * event loop: mapping a graph indexes each of its nodes (~40 ms at 1M names) and a search at 1M
 * takes 2–3 ms, and the loop that answers requests runs neither. One worker per graph in use
 * (usearch's index object belongs to the thread that made it); HnswIndex ends it once another
 * graph has taken its place and no search waits on it. It runs at the process's priority, unlike
 * the build worker: searches are what the host is for.
 */
import { existsSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { createHnsw, MIN_SEARCH_BREADTH, type GraphAnswer, type SearchReply, type SearchRequest } from './hnsw';

const port = parentPort!;
const { dimensions, file } = workerData as { dimensions: number; file: string };
const graph = createHnsw(dimensions, MIN_SEARCH_BREADTH);
const reply = (message: SearchReply) => port.postMessage(message, message.type === 'found' ? message.answers.flatMap((a) => ('keys' in a ? [a.keys.buffer as ArrayBuffer] : [])) : []);

try {
  // usearch aborts the process when an index whose view failed is destroyed (at this worker's end), so a missing file is not viewed at all.
  if (!existsSync(file)) throw new Error('no such file');
  graph.view(file);
  reply({ type: 'viewed', size: Number(graph.size()) });
  port.on('message', ({ searches }: SearchRequest) => {
    const answers = searches.map(({ id, query, k, breadth }): GraphAnswer => {
      try {
        // usearch looks at max(expansion_search, k) entries: asking for more is searching wider
        // (the view's expansion_search is MIN_SEARCH_BREADTH, so `breadth` decides).
        const found = graph.search(query, Math.max(k, breadth), 1);
        return { id, keys: Uint32Array.from(found.keys.subarray(0, k), (key) => Number(key)) };
      } catch (err) {
        return { id, error: (err as Error).message };
      }
    });
    reply({ type: 'found', answers });
  });
} catch (err) {
  reply({ type: 'error', message: `mapping ${file}: ${(err as Error).message}` });
}
