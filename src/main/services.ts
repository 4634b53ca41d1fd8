/** Wiring shared by the entry points: Temporal connections and the API server. */
import { StripeCheckout } from '../checkout/stripe';
import { serviceClientInterceptors } from '../temporal/request-context';
import type { MasterKeyring } from '../auth/secret-box';
import { configuredStarter } from '../temporal/start';
import { temporalConnectionOptions } from '../temporal/connect-options';
import { watchChangeFeed } from '../metrics/metrics';
import http from 'node:http';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { Config, Environment } from '../config';
import { createApp } from '../api/app';
import { createApiServer } from '../api/http-server';
import { ClickRecorder } from '../referral/clicks';
import { CredentialService } from '../auth/credentials';
import { SecretBox } from '../auth/secret-box';
import { admissionRedis, RedisAdmission } from '../auth/redis-admission';
import { AdmissionStoreHold, admissionStoreIdentity, recordAdmissionStore } from '../auth/admission-store';
import { ChangeFeed } from '../db/change-feed';
import { ListingCache } from '../discovery/listing-cache';
import type { DomainSearch } from '../discovery/search';
import type { QuoteTokenSigner } from '../orders/quote-token';
import path from 'node:path';
import type { HybridSearch } from '../search/hybrid-search';
import type { OpenSearchSearch } from '../search/opensearch/engine';
import { PageLimits } from '../pages/limits';
import type { Redis } from 'ioredis';

export interface TemporalConnections {
  connection: Connection;
  nativeConnection: NativeConnection;
  client: Client;
  close(): Promise<void>;
}

/**
 * The API's connection retries a call at most `callAttempts` times (about 0.6 s for 4) before the
 * request answers 503, instead of the SDK's ten (about 20 s) during which a partner's request would
 * hang while the Temporal server restarts. The worker's NativeConnection keeps Core's own retries.
 */
/** Call attempts of the API's Temporal connection (see connectTemporal). */
export const API_TEMPORAL_CALL_ATTEMPTS = 4;

export async function connectTemporal(address: string, namespace: string, options: { callAttempts?: number } = {}): Promise<TemporalConnections> {
  // TLS and API key from Temporal's environment configuration (src/temporal/connect-options.ts).
  const reach = temporalConnectionOptions(address);
  const connection = await Connection.connect({
    ...reach,
    ...(options.callAttempts ? { interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: options.callAttempts }))] } : {}),
  });
  const nativeConnection = await NativeConnection.connect(reach);
  const client = new Client({ connection, namespace, interceptors: serviceClientInterceptors() });
  return {
    connection,
    nativeConnection,
    client,
    close: async () => {
      await nativeConnection.close();
      await connection.close();
    },
  };
}

export function temporalReadiness(connection: Connection): () => Promise<void> {
  return async () => {
    await connection.workflowService.getSystemInfo({});
  };
}

export interface ApiServerDeps {
  config: Config;
  dataSource: DataSource;
  masterKey: MasterKeyring | Buffer;
  quoteSigner: QuoteTokenSigner;
  search: DomainSearch;
  temporal: Pick<TemporalConnections, 'connection' | 'client'>;
  logger: Logger;
}

/**
 * Admission in Redis when REDIS_URL is set, with the credential and listing caches it needs, kept
 * current by Postgres' change feed (bench/RESULTS.md); else admission in Postgres, no caches.
 */
export interface AdmissionParts {
  admission?: RedisAdmission;
  credentials: CredentialService;
  listings?: ListingCache;
  /** The change feed that keeps `credentials` and `listings` current (with Redis admission). */
  feed?: ChangeFeed;
  /** The admission store's client, when admission is in Redis (page limits share it). */
  redis?: Redis;
  close(): Promise<void>;
}

export async function admissionParts(config: Pick<Config, 'redis'>, dataSource: DataSource, secretBox: SecretBox, logger: Logger): Promise<AdmissionParts> {
  if (!config.redis.url) return { credentials: new CredentialService(dataSource, secretBox), close: async () => undefined };
  const feed = ChangeFeed.forDataSource(dataSource, logger);
  const credentials = new CredentialService(dataSource, secretBox, 0, feed);
  const listings = new ListingCache(dataSource, feed, undefined, (err) => logger.warn({ err }, 'listing mirror not loaded: availability and pricing read Postgres'));
  const redis = admissionRedis(config.redis.url);
  redis.on('error', (err) => logger.warn({ err }, 'Redis (admission) unavailable'));
  const admission = new RedisAdmission(redis, undefined, undefined, (foreignId) =>
    logger.error({ foreignId }, 'the Redis at REDIS_URL is another admission store than the one this process holds: admission answers 503 until this process is restarted or the store comes back'),
  );
  try {
    await feed.start();
    watchChangeFeed(() => feed.lagMs);
    await admission.start();
    await listings.warm();
  } catch (err) {
    await feed.close();
    await admission.abandonStart();
    await admission.close();
    throw err;
  }
  return {
    admission,
    credentials,
    listings,
    feed,
    redis,
    close: async () => {
      await feed.close();
      await admission.close();
    },
  };
}

/**
 * The public pages' limits per client address, shared by every API process: in a Redis of their
 * own (LIMITS_REDIS_URL; docker-compose's redis-limits, an LRU cache with a memory budget) when
 * given, so that a flood of addresses, each a few keys, can only evict limit keys and never fill
 * the admission store (whose `noeviction` makes a full Redis refuse signed requests); else in the
 * admission Redis (npm start's one Redis), else in each process.
 */
export function pageLimitsFor(config: Pick<Config, 'pageLimits' | 'redis'>, admissionRedisClient: Redis | undefined, logger: Logger): { pageLimits: PageLimits; close(): Promise<void> } {
  if (!config.redis.limitsUrl) return { pageLimits: new PageLimits(config.pageLimits, admissionRedisClient), close: async () => undefined };
  const redis = admissionRedis(config.redis.limitsUrl);
  redis.on('error', (err) => logger.warn({ err }, 'Redis (page limits) unavailable: each process limits on its own meanwhile'));
  void redis.connect().catch(() => undefined);
  return { pageLimits: new PageLimits(config.pageLimits, redis), close: async () => void redis.disconnect() };
}

export async function startApiServer(deps: ApiServerDeps): Promise<{ server: http.Server; url: string; close(): Promise<void> }> {
  const secretBox = new SecretBox(deps.masterKey);
  const clickRecorder = new ClickRecorder(deps.dataSource, deps.logger);
  const parts = await admissionParts(deps.config, deps.dataSource, secretBox, deps.logger);
  let hold: AdmissionStoreHold | undefined;
  try {
    hold = await AdmissionStoreHold.take(deps.dataSource, admissionStoreIdentity(parts.admission), deps.logger);
    if (await recordAdmissionStore(deps.dataSource, parts.admission ? 'redis' : 'postgres', parts.admission)) {
      deps.logger.warn({ store: hold.identity }, 'admission switched store: requests signed before now are refused once');
    }
  } catch (err) {
    await hold?.release();
    // An id this start wrote into an empty Redis goes again, so processes holding its old id write theirs back.
    await parts.admission?.abandonStart();
    await parts.close();
    throw err;
  }
  const held = hold;
  const limits = pageLimitsFor(deps.config, parts.redis, deps.logger);
  const app = createApp({
    clickRecorder,
    config: deps.config,
    dataSource: deps.dataSource,
    credentials: parts.credentials,
    admission: parts.admission,
    listings: parts.listings,
    pageLimits: limits.pageLimits,
    ...(deps.config.stripe ? { hosted: { live: new StripeCheckout(deps.config.stripe) } } : {}),
    secretBox,
    search: deps.search,
    workflows: configuredStarter(deps.temporal.client, deps.config.temporal),
    quoteSigner: deps.quoteSigner,
    logger: deps.logger,
    temporalReady: temporalReadiness(deps.temporal.connection),
  });
  const origin = (port: number) => deps.config.http.publicBaseUrl ?? `http://${deps.config.http.host}:${port}`;
  let url = origin(deps.config.http.port);
  const server = createApiServer(app.callback(), () => url);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.config.http.port, deps.config.http.host, () => resolve());
  });
  const address = server.address();
  url = origin(typeof address === 'object' && address ? address.port : deps.config.http.port);
  return {
    server,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      })
        .then(() => clickRecorder.flush())
        .then(() => parts.close())
        .then(() => limits.close())
        .then(() => held.release()),
  };
}

/**
 * The hybrid (keyword + semantic) search: the model from the tool cache (fetched on first use),
 * embeddings kept in the data directory, and every environment's vectors built now, with progress.
 * The search process (src/main/search.ts) calls it, and the benchmarks; its modules are imported
 * here rather than at the top, so that an API process, which imports this file, loads none of
 * them (no ONNX runtime, no dictionaries).
 */
/** The embedded engine's log of an environment's name vectors (the OpenSearch engine's first indexing reads it too). */
function namesLog(config: Config, environment: Environment, modelId: string): string {
  return path.join(config.dataDir, 'embeddings', `${environment}-${modelId}.log`);
}

export async function startSearch(config: Config, dataSource: DataSource, log: (m: string) => void, environments: Environment[] = ['sandbox', 'live'], feed?: ChangeFeed): Promise<HybridSearch> {
  const [{ Embedder }, { EmbeddingCache }, { HybridSearch }, { InventoryIndex }, { ensureModelFiles, MODEL_ID }] = await Promise.all([
    import('../search/embedder.js'),
    import('../search/embedding-cache.js'),
    import('../search/hybrid-search.js'),
    import('../search/inventory-index.js'),
    import('../search/model-files.js'),
  ]);
  InventoryIndex.defaults.annThreshold = config.search.annThreshold;
  const files = await ensureModelFiles(config.toolCacheDir, log);
  const embedder = await Embedder.load(files);
  const search = new HybridSearch(dataSource, embedder, (environment) => new EmbeddingCache(namesLog(config, environment, MODEL_ID)), log, path.join(config.dataDir, 'embeddings'));
  // Subscribed before the caller starts the feed; searches sync before each answer until it is heard.
  if (feed) search.follow(feed);
  for (const environment of environments) await search.load(environment);
  return search;
}

/**
 * The OpenSearch engine (SEARCH_ENGINE=opensearch) for the search process and the benchmarks,
 * on the cluster at OPENSEARCH_URL (npm start starts a local node and sets it when unset). Each
 * environment is caught up with the inventory first; `feed` (subscribed here, started by the
 * caller) then wakes its syncs.
 */
export async function startOpenSearchSearch(config: Config, dataSource: DataSource, log: (m: string) => void, environments: Environment[] = ['sandbox', 'live'], feed?: ChangeFeed): Promise<OpenSearchSearch> {
  const url = config.search.opensearch.url;
  if (!url) throw new Error('SEARCH_ENGINE=opensearch needs OPENSEARCH_URL (npm start starts a local node when it is unset)');
  const [{ Embedder }, { EmbeddingCache }, { OpenSearchSearch, openSearchClient }, { ensureModelFiles, MODEL_ID }] = await Promise.all([
    import('../search/embedder.js'),
    import('../search/embedding-cache.js'),
    import('../search/opensearch/engine.js'),
    import('../search/model-files.js'),
  ]);
  const embedder = await Embedder.load(await ensureModelFiles(config.toolCacheDir, log));
  const words = new EmbeddingCache(path.join(config.dataDir, 'embeddings', `opensearch-words-${MODEL_ID}.log`));
  const { shards, replicas } = config.search.opensearch;
  const search = new OpenSearchSearch(dataSource, embedder, openSearchClient(url), config.search.opensearch.index, words, log, { shards, replicas }, (environment) => namesLog(config, environment, MODEL_ID));
  for (const environment of environments) await search.load(environment, feed);
  return search;
}
