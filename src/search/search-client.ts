/**
 * The API process's side of the search process: DomainSearch over HTTP on this host's search
 * socket (`unix:<path>`, or `http://host:port`), with keep-alive connections (node:http's Agent).
 * It imports nothing of the model, the dictionaries or the index, so an API process holds none
 * of them. When the search process does not answer (down, restarting, or slower than the
 * timeout), a search is 503 `service_unavailable` in the contract's error shape, with
 * Retry-After; nothing else in the API depends on it.
 */
import http from 'node:http';
import { ApiError } from '../api/errors';
import type { Environment } from '../config';
import type { DomainSearch, SearchHit } from '../discovery/search';

/** What the search process says about itself (GET /status). */
export interface SearchStatus {
  pid: number;
  rss: number;
  /** Time its main thread has spent in garbage collection since it started, ms. */
  gcMs: number;
  environments: Record<string, EngineStatus>;
  /** Still reading the inventory (it listens before): no environment yet. */
  loading?: boolean;
}

/** One environment's index as the search process reports it. */
export interface EngineStatus {
  names: number;
  /** Names waiting for their vector (the embedded engine). */
  pendingVectors: number;
  /** What answers the vector searches: the embedded engine's exact scan or HNSW graph, or OpenSearch. */
  vectorIndex: 'exact' | 'hnsw' | 'opensearch';
  /** A graph (embedded) or a new index (OpenSearch) is being built. */
  building: boolean;
  /** The embedded engine: its HNSW graph is being written with its changes and opened again (in worker threads). */
  saving?: boolean;
  /**
   * Searches that waited for a read of the inventory since start (the embedded engine): while the
   * change feed is heard, only those that came after a change was heard, and before the index
   * had read it.
   */
  searchesThatRead?: number;
  /** Whether this search process writes the index (the OpenSearch engine: one indexer per environment among the processes on an index). */
  indexer?: boolean;
  /**
   * The OpenSearch engine: the mapping version of the index searched, as read when the process
   * started or set by its own reindex (null: none recorded), and the one this code writes
   * (`admin search reindex` builds one of it).
   */
  mappingVersion?: number | null;
  expectedMappingVersion?: number;
}

/** The search process did not answer as it should; the message says how (for the log only). */
export class SearchUnavailable extends Error {
  readonly name = 'SearchUnavailable';
}

const RETRY_AFTER_SECONDS = '5';

export class SearchClient implements DomainSearch {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 16 });
  private readonly target: { socketPath: string } | { host: string; port: number };

  constructor(
    readonly url: string,
    private readonly timeoutMs = 10_000,
    /** Told why, each time a search is answered 503 (the partner sees no detail). */
    private readonly onUnavailable: (err: SearchUnavailable) => void = () => undefined,
  ) {
    if (url.startsWith('unix:')) this.target = { socketPath: url.slice('unix:'.length) };
    else {
      const parsed = new URL(url);
      this.target = { host: parsed.hostname, port: Number(parsed.port || 80) };
    }
  }

  /** GET (or POST) a path of the search process and parse its JSON answer; SearchUnavailable on anything else. */
  private get<T>(pathAndQuery: string, timeoutMs = this.timeoutMs, method: 'GET' | 'POST' = 'GET'): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const req = http.request({ ...this.target, agent: this.agent, method, path: pathAndQuery, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => reject(new SearchUnavailable(err.message)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) return reject(new SearchUnavailable(`search process answered ${res.statusCode}: ${text.slice(0, 500)}`));
          try {
            resolve(JSON.parse(text) as T);
          } catch {
            reject(new SearchUnavailable('search process answered something other than JSON'));
          }
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', (err) => reject(new SearchUnavailable(err.message)));
      req.end();
    });
  }

  async search(environment: Environment, query: string, limit?: number): Promise<SearchHit[]> {
    const params = new URLSearchParams({ environment, q: query, ...(limit === undefined ? {} : { limit: String(limit) }) });
    try {
      return (await this.get<{ hits: SearchHit[] }>(`/search?${params}`)).hits;
    } catch (err) {
      if (!(err instanceof SearchUnavailable)) throw err;
      this.onUnavailable(err);
      throw new ApiError('service_unavailable', 'search is unavailable right now (other endpoints are not affected); retry shortly', undefined, { 'Retry-After': RETRY_AFTER_SECONDS });
    }
  }

  /** Resolves when the search process answers its health check (for /readyz). */
  async ready(timeoutMs = 2_000): Promise<void> {
    await this.get('/healthz', timeoutMs);
  }

  status(): Promise<SearchStatus> {
    return this.get<SearchStatus>('/status');
  }

  /** `admin search reindex`: the OpenSearch engine's new index, built and swapped in (may take minutes at scale). */
  reindex(timeoutMs = 6 * 3600_000): Promise<Record<string, unknown>> {
    return this.get<Record<string, unknown>>('/reindex', timeoutMs, 'POST');
  }

  /** Closes the idle keep-alive connections. */
  close(): void {
    this.agent.destroy();
  }
}
