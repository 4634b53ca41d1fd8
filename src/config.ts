/**
 * Typed configuration, read and validated once. Nothing else in the code base reads process.env.
 */
import path from 'node:path';
import { z } from 'zod';
import { singleKeyring, type MasterKeyring } from './auth/secret-box';

/**
 * Names above which an environment's vectors go into an HNSW graph. At 40,000 generated names the
 * exact index (two int8 scans a search, ~3.7 ms each) gave 114–116 searches/s, the graph 252–372
 * (bench/RESULTS.md, 2026-11-28); at 4,000 the two scans cost ~0.35 ms, about a graph's searches.
 */
export const DEFAULT_ANN_THRESHOLD = 20_000;

const projectRoot = path.resolve(__dirname, '..', '..');

const positiveNumber = z.coerce.number().positive();

// z.coerce.boolean() would read "false" as true; an unclear value is a start-up error, not a guess.
const flag = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off']))
  .transform((v) => v === 'true' || v === '1' || v === 'yes' || v === 'on');

/** The From of every email unless MAIL_FROM says otherwise. */
export const DEFAULT_MAIL_FROM = 'Domain Marketplace <no-reply@marketplace.invalid>';

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  PUBLIC_BASE_URL: z.string().url().optional(),
  TRUST_PROXY: flag.default(false),
  METRICS_HOST: z.string().default('127.0.0.1'),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9465),
  DATABASE_URL: z.string().optional(),
  EMBEDDED_PG_PORT: z.coerce.number().int().default(54329),
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('partner-api'),
  TEMPORAL_PORT: z.coerce.number().int().default(7233),
  TEMPORAL_UI_PORT: z.coerce.number().int().default(8233),
  TEMPORAL_CLI_PATH: z.string().optional(),
  TEMPORAL_WEBHOOK_TASK_QUEUE: z.string().optional(),
  TEMPORAL_WORKER_VERSIONING: flag.default(false),
  TEMPORAL_BUILD_ID: z.string().optional(),
  WORKFLOW_BUNDLE: z.string().min(1).optional(),
  // The operators' gate between the Temporal UI and Temporal (src/temporal/ui-gate.ts).
  TEMPORAL_UI_GATE_HOST: z.string().default('127.0.0.1'),
  TEMPORAL_UI_GATE_PORT: z.coerce.number().int().min(0).max(65535).default(7236),
  TEMPORAL_UI_OIDC_ISSUER: z.string().url().optional(),
  TEMPORAL_UI_OIDC_AUDIENCE: z.string().min(1).optional(),
  TEMPORAL_UI_OPERATOR_GROUP: z.string().min(1).default('partner-api-operators'),
  TEMPORAL_UI_GROUPS_CLAIM: z.string().min(1).default('groups'),
  WORKER_HEALTH_FILE: z.string().min(1).optional(),
  // Read by the OpenTelemetry SDK itself (src/telemetry/tracing.ts); here so that it is known and shown.
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().optional(),
  // Live card payments (CONTRACT §9): Stripe when PAYMENT_PROCESSOR=stripe and its keys are set.
  PAYMENT_PROCESSOR: z.enum(['none', 'stripe']).default('none'),
  STRIPE_SECRET_KEY: z.string().optional(),
  STRIPE_WEBHOOK_SECRET: z.string().optional(),
  STRIPE_API_URL: z.string().url().optional(),
  // Email (CONTRACT §16): SMTP at SMTP_URL (smtp:// or smtps://, user and password in the URL), from MAIL_FROM.
  SMTP_URL: z.string().regex(/^smtps?:\/\/\S+$/, 'an smtp:// or smtps:// URL').optional(),
  MAIL_FROM: z.string().min(3).default(DEFAULT_MAIL_FROM),
  MAILPIT_SMTP_PORT: z.coerce.number().int().default(1025),
  MAILPIT_UI_PORT: z.coerce.number().int().default(8025),
  DATA_DIR: z.string().default(path.join(projectRoot, '.data')),
  TOOL_CACHE_DIR: z.string().default(path.join(projectRoot, '.tools')),
  MASTER_KEY: z.string().optional(),
  QUOTE_SIGNING_KEY: z.string().optional(),
  RATE_LIMIT_SANDBOX_PER_SECOND: positiveNumber.default(25),
  RATE_LIMIT_LIVE_PER_SECOND: positiveNumber.default(100),
  RATE_LIMIT_BURST_MULTIPLIER: z.coerce.number().min(1).default(2),
  WEBHOOK_ALLOW_LOOPBACK: flag.default(false),
  PAGE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(120),
  PAGE_LIMIT_BURST: z.coerce.number().int().min(1).default(60),
  CLICK_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(30),
  DECLINE_LIMIT_PER_HOUR: z.coerce.number().int().min(1).default(10),
  BUY_NOW_LIMIT_PER_HOUR: z.coerce.number().int().min(1).default(20),
  APPLY_LIMIT_PER_HOUR: z.coerce.number().int().min(1).default(10),
  LINK_LOOKUP_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(60),
  QUOTA_ACTIVE_QUOTES_SANDBOX: z.coerce.number().int().min(1).default(100),
  QUOTA_ACTIVE_QUOTES_LIVE: z.coerce.number().int().min(1).default(1000),
  QUOTA_OPEN_CASES_SANDBOX: z.coerce.number().int().min(1).default(100),
  QUOTA_OPEN_CASES_LIVE: z.coerce.number().int().min(1).default(10_000),
  SEARCH_URL: z.string().regex(/^(unix:\/.+|https?:\/\/.+)$/, 'unix:/absolute/path.sock or http://host:port').optional(),
  SEARCH_ANN_THRESHOLD: z.coerce.number().int().min(1).default(DEFAULT_ANN_THRESHOLD),
  SEARCH_TIMEOUT_MS: z.coerce.number().int().min(1).default(10_000),
  SEARCH_ENGINE: z.enum(['embedded', 'opensearch']).default('embedded'),
  OPENSEARCH_URL: z.string().regex(/^https?:\/\/.+/, 'http(s)://host:port').optional(),
  OPENSEARCH_INDEX: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,200}$/, 'lower-case letters, digits, - and _').default('partner-api-domains'),
  OPENSEARCH_HEAP: z.string().regex(/^\d+[mg]$/, 'a JVM heap size such as 512m or 2g').default('512m'),
  OPENSEARCH_SHARDS: z.coerce.number().int().min(1).max(1024).default(1),
  OPENSEARCH_REPLICAS: z.coerce.number().int().min(0).max(16).default(0),
  /** npm start only: when redis-server is missing and this process is root with apt-get, install Debian's. */
  REDIS_INSTALL: flag.default(true),
  REDIS_URL: z.string().regex(/^(rediss?:\/\/.+|\/.+)$/, 'redis://host:port, rediss://… or /absolute/path.sock').optional(),
  LIMITS_REDIS_URL: z.string().regex(/^(rediss?:\/\/.+|\/.+)$/, 'redis://host:port, rediss://… or /absolute/path.sock').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  NODE_ENV: z.string().optional(),
});

export type Environment = 'sandbox' | 'live';

/** How many active quotes and open brokerage cases a partner may hold per environment, unless raised for it. */
export interface QuotaDefaults {
  activeQuotes: Record<Environment, number>;
  openCases: Record<Environment, number>;
}

/** Every environment variable the service reads (docker-compose may set no other: test/main/compose.test.ts). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

export interface Config {
  projectRoot: string;
  /** trustProxy: the API runs behind a TLS-terminating proxy whose X-Forwarded-For/-Proto it may believe. */
  http: { port: number; host: string; publicBaseUrl?: string; trustProxy?: boolean };
  database: { url?: string; embeddedPort: number };
  temporal: {
    address?: string;
    namespace: string;
    taskQueue: string;
    /** Webhook deliveries' own task queue, served by a second worker in the worker process. */
    webhookTaskQueue: string;
    devServerPort: number;
    uiPort: number;
    cliPath?: string;
    /** A workflow bundle built ahead (the image builds one: `tools-cli bundle`); unset, the worker bundles at start. */
    workflowBundle?: string;
    /**
     * Worker Versioning (worker deployments): on, the worker announces `partner-api` and its build
     * id and makes that version current once it polls. npm start turns it on for its own dev server.
     */
    workerVersioning: boolean;
    /** TEMPORAL_BUILD_ID; otherwise `<package version>+<commit>` from git. */
    buildId?: string;
    /** The operators' gate the Temporal UI talks to (src/temporal/ui-gate.ts). */
    uiGate: { host: string; port: number; oidcIssuer?: string; oidcAudience?: string; operatorGroup: string; groupsClaim: string };
  };
  dataDir: string;
  toolCacheDir: string;
  /** 32-byte key that encrypts credential secrets at rest; undefined means "use the dev stack's key file". */
  masterKey?: MasterKeyring;
  /** PKCS#8 PEM Ed25519 key that signs quote tokens; undefined means "use the dev stack's key file". */
  quoteSigningKeyPem?: string;
  rateLimits: { perSecond: Record<Environment, number>; burstMultiplier: number };
  /** allowLoopback: sandbox webhooks may target 127.0.0.0/8, ::1 and localhost (a partner's own machine, local development only). */
  webhooks: { allowLoopback: boolean };
  /** Per partner and environment (CONTRACT §15): the defaults; `admin partner quota` raises them for one partner. */
  quotas: QuotaDefaults;
  /** Per client address on the public pages (CONTRACT §15; src/pages/limits.ts). */
  pageLimits: { pagesPerMinute: number; pageBurst: number; clicksPerMinute: number; declinesPerHour: number; buyNowPerHour: number; applicationsPerHour: number; lookupsPerMinute: number };
  /**
   * The search process of this host: where it listens and the API processes call it
   * (`unix:<path>` or `http://host:port`), the inventory size above which its vectors go into an
   * HNSW graph, and how long an API process waits for an answer before it says 503.
   */
  search: {
    url: string;
    annThreshold: number;
    timeoutMs: number;
    /**
     * `embedded`: every name, vector and graph in the search process's memory (one host);
     * `opensearch`: candidates from an OpenSearch cluster at `opensearch.url` through the alias
     * `opensearch.index` (npm start runs a local node of `opensearch.heap` when no URL is given).
     */
    engine: 'embedded' | 'opensearch';
    /** `shards` and `replicas`: of each index the search process creates (the first, and each reindex). */
    opensearch: { url?: string; index: string; heap: string; shards: number; replicas: number };
  };
  /**
   * Redis for admission (nonces, rate-limit buckets), shared by every API process; unset: admission
   * in Postgres. `npm start` starts a redis-server of its own, and with `install` it may first
   * install Debian's when none is (root with apt-get).
   */
  /** `limitsUrl`: the public pages' limits in a Redis of their own (an LRU cache), so a flood of addresses can never fill the admission store. */
  redis: { url?: string; install?: boolean; limitsUrl?: string };
  logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
  /** The operators' metrics (CONTRACT §13): the API's on host:port, the worker's on host:workerPort; never the public port. */
  metrics: { host: string; port: number; workerPort: number };
  /** The worker touches this file every few seconds while it polls (docker-compose's health check); unset: none. */
  workerHealthFile?: string;
  /** Live card payments: Stripe's keys when PAYMENT_PROCESSOR=stripe (src/checkout/stripe.ts); none otherwise. */
  stripe?: { secretKey: string; webhookSecret: string; apiUrl?: string };
  /**
   * Email: SMTP_URL, else none (nothing is sent; each email waits, queued, for a mail server).
   * npm start runs a local Mailpit on the mailpit ports when SMTP_URL is not set.
   */
  mail: { smtpUrl?: string; from: string; mailpit: { smtpPort: number; uiPort: number } };
  /** OTEL_EXPORTER_OTLP_ENDPOINT: where traces go when set (the OpenTelemetry SDK reads it; shown by npm start). */
  otlpEndpoint?: string;
  /** NODE_ENV=production (the image sets it): no key is ever invented, they must be given. */
  production: boolean;
}

function decodeOneKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32) throw new Error('MASTER_KEY must be 32 bytes, as 64 hex characters or base64');
  return key;
}

/**
 * MASTER_KEY: one key (version 1), or a keyring `<version>:<key>,<version>:<key>…` (versions 1 to
 * 255, each key 32 bytes as hex or base64); the highest version seals, every one opens
 * (src/auth/secret-box.ts; docs/operators/security.md).
 */
export function decodeMasterKey(text: string): MasterKeyring {
  const trimmed = text.trim();
  if (!trimmed.includes(':')) return singleKeyring(decodeOneKey(trimmed));
  const keys = new Map<number, Buffer>();
  for (const entry of trimmed.split(',')) {
    const match = /^\s*(\d{1,3}):(.+)$/.exec(entry);
    const version = Number(match?.[1]);
    if (!match || version < 1 || version > 255) throw new Error('MASTER_KEY as a keyring is <version>:<key>,… with versions 1 to 255');
    if (keys.has(version)) throw new Error(`MASTER_KEY names version ${version} twice`);
    keys.set(version, decodeOneKey(match[2]));
  }
  return { current: Math.max(...keys.keys()), keys };
}

/** The keyring as MASTER_KEY spells it (`<version>:<hex>,…`), to hand to a child process. */
export function encodeMasterKey(ring: MasterKeyring): string {
  return [...ring.keys].map(([version, key]) => `${version}:${key.toString('hex')}`).join(',');
}

/** A PEM given as it is or base64-encoded (handy in environment files). */
function decodePem(text: string): string {
  return text.includes('-----BEGIN') ? text.replace(/\\n/g, '\n') : Buffer.from(text, 'base64').toString('utf8');
}

/** PAYMENT_PROCESSOR=stripe needs both of Stripe's secrets; without it live checkout takes no payments. */
function stripeSettings(e: z.infer<typeof EnvSchema>): Config['stripe'] {
  if (e.PAYMENT_PROCESSOR !== 'stripe') return undefined;
  if (!e.STRIPE_SECRET_KEY || !e.STRIPE_WEBHOOK_SECRET) throw new Error('PAYMENT_PROCESSOR=stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET');
  return { secretKey: e.STRIPE_SECRET_KEY, webhookSecret: e.STRIPE_WEBHOOK_SECRET, ...(e.STRIPE_API_URL ? { apiUrl: e.STRIPE_API_URL } : {}) };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  for (const [name, rate] of [['RATE_LIMIT_SANDBOX_PER_SECOND', e.RATE_LIMIT_SANDBOX_PER_SECOND], ['RATE_LIMIT_LIVE_PER_SECOND', e.RATE_LIMIT_LIVE_PER_SECOND]] as const) {
    // A bucket of rate × burst must hold at least one request, or no request is ever admitted.
    if (rate * e.RATE_LIMIT_BURST_MULTIPLIER < 1) throw new Error(`invalid configuration: ${name} × RATE_LIMIT_BURST_MULTIPLIER must be at least 1`);
  }
  return {
    projectRoot,
    http: { port: e.PORT, host: e.HOST, publicBaseUrl: e.PUBLIC_BASE_URL, trustProxy: e.TRUST_PROXY },
    database: { url: e.DATABASE_URL || undefined, embeddedPort: e.EMBEDDED_PG_PORT },
    temporal: {
      address: e.TEMPORAL_ADDRESS || undefined,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      webhookTaskQueue: e.TEMPORAL_WEBHOOK_TASK_QUEUE || `${e.TEMPORAL_TASK_QUEUE}-webhooks`,
      devServerPort: e.TEMPORAL_PORT,
      uiPort: e.TEMPORAL_UI_PORT,
      cliPath: e.TEMPORAL_CLI_PATH || undefined,
      workerVersioning: e.TEMPORAL_WORKER_VERSIONING,
      buildId: e.TEMPORAL_BUILD_ID || undefined,
      workflowBundle: e.WORKFLOW_BUNDLE || undefined,
      uiGate: {
        host: e.TEMPORAL_UI_GATE_HOST,
        port: e.TEMPORAL_UI_GATE_PORT,
        oidcIssuer: e.TEMPORAL_UI_OIDC_ISSUER || undefined,
        oidcAudience: e.TEMPORAL_UI_OIDC_AUDIENCE || undefined,
        operatorGroup: e.TEMPORAL_UI_OPERATOR_GROUP,
        groupsClaim: e.TEMPORAL_UI_GROUPS_CLAIM,
      },
    },
    dataDir: path.resolve(e.DATA_DIR),
    toolCacheDir: path.resolve(e.TOOL_CACHE_DIR),
    masterKey: e.MASTER_KEY ? decodeMasterKey(e.MASTER_KEY) : undefined,
    quoteSigningKeyPem: e.QUOTE_SIGNING_KEY ? decodePem(e.QUOTE_SIGNING_KEY) : undefined,
    rateLimits: {
      perSecond: { sandbox: e.RATE_LIMIT_SANDBOX_PER_SECOND, live: e.RATE_LIMIT_LIVE_PER_SECOND },
      burstMultiplier: e.RATE_LIMIT_BURST_MULTIPLIER,
    },
    webhooks: { allowLoopback: e.WEBHOOK_ALLOW_LOOPBACK },
    pageLimits: {
      pagesPerMinute: e.PAGE_LIMIT_PER_MINUTE,
      pageBurst: e.PAGE_LIMIT_BURST,
      clicksPerMinute: e.CLICK_LIMIT_PER_MINUTE,
      declinesPerHour: e.DECLINE_LIMIT_PER_HOUR,
      buyNowPerHour: e.BUY_NOW_LIMIT_PER_HOUR,
      applicationsPerHour: e.APPLY_LIMIT_PER_HOUR,
      lookupsPerMinute: e.LINK_LOOKUP_LIMIT_PER_MINUTE,
    },
    quotas: {
      activeQuotes: { sandbox: e.QUOTA_ACTIVE_QUOTES_SANDBOX, live: e.QUOTA_ACTIVE_QUOTES_LIVE },
      openCases: { sandbox: e.QUOTA_OPEN_CASES_SANDBOX, live: e.QUOTA_OPEN_CASES_LIVE },
    },
    search: {
      url: e.SEARCH_URL ?? `unix:${path.join(path.resolve(e.DATA_DIR), 'search.sock')}`,
      annThreshold: e.SEARCH_ANN_THRESHOLD,
      timeoutMs: e.SEARCH_TIMEOUT_MS,
      engine: e.SEARCH_ENGINE,
      opensearch: { url: e.OPENSEARCH_URL, index: e.OPENSEARCH_INDEX, heap: e.OPENSEARCH_HEAP, shards: e.OPENSEARCH_SHARDS, replicas: e.OPENSEARCH_REPLICAS },
    },
    redis: { url: e.REDIS_URL || undefined, install: e.REDIS_INSTALL, limitsUrl: e.LIMITS_REDIS_URL || undefined },
    logLevel: e.LOG_LEVEL,
    metrics: { host: e.METRICS_HOST, port: e.METRICS_PORT, workerPort: e.WORKER_METRICS_PORT },
    workerHealthFile: e.WORKER_HEALTH_FILE || undefined,
    otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT || undefined,
    stripe: stripeSettings(e),
    mail: { smtpUrl: e.SMTP_URL || undefined, from: e.MAIL_FROM, mailpit: { smtpPort: e.MAILPIT_SMTP_PORT, uiPort: e.MAILPIT_UI_PORT } },
    production: e.NODE_ENV === 'production',
  };
}

/**
 * `npm start` on one machine: the developer's webhook receiver is on the same machine, so sandbox
 * webhooks may go to loopback unless WEBHOOK_ALLOW_LOOPBACK says otherwise; Worker Versioning is on
 * with the dev server it starts.
 */
export function loadDevStackConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Its own dev server supports worker deployments; a server named by TEMPORAL_ADDRESS may not.
  // One build id for every npm start: its single worker replaces the last one, so a run pinned by
  // an earlier start is never left without a worker (patches and the replay test keep it safe).
  return loadConfig({ WEBHOOK_ALLOW_LOOPBACK: 'true', TEMPORAL_WORKER_VERSIONING: env.TEMPORAL_ADDRESS ? 'false' : 'true', TEMPORAL_BUILD_ID: 'dev-stack', ...env });
}

/** Where the links the service hands out point: PUBLIC_BASE_URL, else the local API (development). */
export function linksBaseUrl(config: Pick<Config, 'http'>): string {
  return config.http.publicBaseUrl ?? `http://localhost:${config.http.port}`;
}
