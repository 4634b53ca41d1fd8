/**
 * The service's metrics (CONTRACT §13), in one registry of their own that each process serves on
 * its operators' port (src/metrics/server.ts), never the public one: the API process's (requests,
 * admission, search, pool, change feed, page limits) and the worker's (webhook deliveries,
 * fulfilment outcomes, registrar calls, ledger postings), each counting what happens in it.
 * Label values are bounded: routes are templates (`/api/partner/v1/orders/{public_id}`), never
 * concrete paths; partners are never a label.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DataSource } from 'typeorm';
import type { DeployVersion } from '../temporal/deployment';
import { Order } from '../db/entities/order';
import { FINAL_ORDER_STATUSES } from '../../workflows/messages';

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: 'partner_api_process_' });

export const httpRequestDuration = new Histogram({
  name: 'partner_api_http_request_duration_seconds',
  help: 'HTTP requests by route template, method and status, from the first byte read to the answer',
  labelNames: ['route', 'method', 'status'] as const,
  buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

export const admissionOutcomes = new Counter({
  name: 'partner_api_admission_total',
  help: 'Signed requests by admission outcome: admitted, replayed, rate_limited, signed_before_restart, forbidden, unavailable (the store did not answer), queue_full',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const searchDuration = new Histogram({
  name: 'partner_api_search_duration_seconds',
  help: 'Calls to the search process by outcome (ok, unavailable: answered 503)',
  labelNames: ['outcome'] as const,
  buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [metricsRegistry],
});

export const webhookRegistrations = new Counter({
  name: 'partner_api_webhook_registrations_total',
  help: 'Webhook endpoints registered or replaced, by environment',
  labelNames: ['environment'] as const,
  registers: [metricsRegistry],
});

export const pageLimitRefusals = new Counter({
  name: 'partner_api_page_limit_refusals_total',
  help: 'Public page requests refused (429 page) or clicks not counted, per limit: pages, clicks, declines, buy_now',
  labelNames: ['limit'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveries = new Counter({
  name: 'partner_api_webhook_deliveries_total',
  help: 'Webhook delivery attempts by environment and outcome: delivered, failed_attempt (retried with back-off), gave_up (after 3 days)',
  labelNames: ['environment', 'outcome'] as const,
  registers: [metricsRegistry],
});

export const recoverySweepRound = new Gauge({
  name: 'partner_api_recovery_sweep_last_round_timestamp_seconds',
  help: "When the recovery sweep (maintenance:fulfilment-recovery) last finished a round's last step on this worker (Unix seconds); alert RecoverySweepStalled",
  registers: [metricsRegistry],
});

export const emailsSent = new Counter({
  name: 'partner_api_emails_total',
  help: 'Email sending by outcome: sent, already_sent (a retry found it sent: nothing sent twice), failed_before, gave_up (after 3 days of failed attempts)',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const fulfilmentOutcomes = new Counter({
  name: 'partner_api_fulfilment_outcomes_total',
  help: 'Orders reaching a final status, by environment and status (TRANSFER_COMPLETED, TRANSFER_FAILED, REFUNDED)',
  labelNames: ['environment', 'status'] as const,
  registers: [metricsRegistry],
});

export const registrarCallDuration = new Histogram({
  name: 'partner_api_registrar_call_duration_seconds',
  help: 'Registrar calls by activity and outcome (ok, rejected, error)',
  labelNames: ['activity', 'outcome'] as const,
  buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30],
  registers: [metricsRegistry],
});

export const ledgerPostings = new Counter({
  name: 'partner_api_ledger_postings_total',
  help: 'Ledger postings written, by kind (counted as written; a transaction rolled back afterwards is rare and retried)',
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
});

/** Where the gauges below read from: the process's pool and change feed, once they exist. */
const watched: { dataSource?: DataSource; feedLagMs?: () => number | undefined } = {};

export function watchPool(dataSource: DataSource): void {
  watched.dataSource = dataSource;
}

export function watchChangeFeed(lagMs: () => number | undefined): void {
  watched.feedLagMs = lagMs;
}

type PgPool = { totalCount: number; idleCount: number; waitingCount: number };
const pool = (): PgPool | undefined => (watched.dataSource?.driver as unknown as { master?: PgPool } | undefined)?.master;

new Gauge({
  name: 'partner_api_db_pool_connections',
  help: "The database pool's connections by state: in_use, idle; waiting counts requests waiting for one",
  labelNames: ['state'] as const,
  registers: [metricsRegistry],
  collect() {
    const p = pool();
    if (!p) return;
    this.set({ state: 'in_use' }, p.totalCount - p.idleCount);
    this.set({ state: 'idle' }, p.idleCount);
    this.set({ state: 'waiting' }, p.waitingCount);
  },
});

new Gauge({
  name: 'partner_api_change_feed_lag_seconds',
  help: "The change feed's last heartbeat round trip (how late the caches hear a change); absent while the feed is down",
  registers: [metricsRegistry],
  collect() {
    const lag = watched.feedLagMs?.();
    if (lag === undefined) this.reset();
    else this.set(lag / 1000);
  },
});

/** The search, timed per call: `unavailable` when the search process did not answer (503). */
export function timedSearch<S extends { search(...args: never[]): Promise<unknown> }>(inner: S): S {
  return Object.assign(Object.create(inner) as S, {
    search: async (...args: Parameters<S['search']>) => {
      const end = searchDuration.startTimer();
      try {
        const hits = await (inner.search as (...a: Parameters<S['search']>) => Promise<unknown>).apply(inner, args);
        end({ outcome: 'ok' });
        return hits;
      } catch (err) {
        end({ outcome: (err as { code?: string }).code === 'service_unavailable' ? 'unavailable' : 'error' });
        throw err;
      }
    },
  });
}

/** Live orders an operator must finish by hand (no live registrar adapter), waiting for over an hour; read from Postgres at each scrape. */
new Gauge({
  name: 'partner_api_orders_awaiting_operator',
  help: 'Live orders not final whose status has not changed for over an hour (an operator records their transfer: admin order transfer-completed|transfer-failed)',
  registers: [metricsRegistry],
  async collect() {
    const dataSource = watched.dataSource;
    if (!dataSource?.isInitialized) return;
    try {
      const waiting = await dataSource
        .getRepository(Order)
        .createQueryBuilder('o')
        .where("o.environment = 'live' AND o.status NOT IN (:...final) AND o.updated_at < now() - interval '1 hour'", { final: [...FINAL_ORDER_STATUSES] })
        .getCount();
      this.set(waiting);
    } catch {
      // Postgres down: the gauge keeps its last value; the 5xx and readiness alerts say why.
    }
  },
});

/** The worker deployment's versions under Worker Versioning (src/temporal/deployment.ts). */
type DeploymentVersions = Array<Pick<DeployVersion, 'build_id' | 'status' | 'pollers' | 'pinned_open_runs'>>;
/** A read of the deployment that does not answer within this is given up (the scrape answers without it). */
const DEPLOYMENT_READ_TIMEOUT_MS = 5_000;
const DEPLOYMENT_READ_EVERY_MS = 30_000;
let readDeployment: (() => Promise<DeploymentVersions>) | undefined;
/**
 * Temporal read at most every DEPLOYMENT_READ_EVERY_MS, one read for the gauges collecting
 * together. A read that failed or did not answer is kept as such for as long (`versions`
 * undefined: the gauges keep their last figures, as the other dependency gauges do), so that a
 * Temporal that hangs makes no scrape wait and gets no pile of reads.
 */
const deploymentReads = new LRUCache<'deployment', { versions?: DeploymentVersions }>({
  max: 1,
  ttl: DEPLOYMENT_READ_EVERY_MS,
  fetchMethod: async () => ({
    versions: await Promise.race([readDeployment!().catch(() => undefined), delay(DEPLOYMENT_READ_TIMEOUT_MS, undefined, { ref: false })]),
  }),
});

/** How the gauges read the deployment (the worker, with Worker Versioning on); undefined: no figures. */
export function watchDeployment(read: (() => Promise<DeploymentVersions>) | undefined): void {
  readDeployment = read;
  deploymentReads.clear();
}

async function deploymentVersions(): Promise<DeploymentVersions | undefined> {
  return readDeployment ? (await deploymentReads.fetch('deployment'))?.versions : undefined;
}

/** A gauge's collect: one figure per version of the deployment, labelled by its build id. */
function perVersion(figure: (v: DeploymentVersions[number]) => number) {
  return async function (this: Gauge<'build_id'>): Promise<void> {
    const versions = await deploymentVersions();
    if (!versions) return;
    this.reset();
    for (const v of versions) this.set({ build_id: v.build_id }, figure(v));
  };
}

new Gauge({
  name: 'partner_api_worker_deployment_pinned_open_runs',
  help: 'Open runs pinned to each worker deployment version (they finish only on its workers); with Worker Versioning on',
  labelNames: ['build_id'] as const,
  registers: [metricsRegistry],
  collect: perVersion((v) => v.pinned_open_runs),
});

new Gauge({
  name: 'partner_api_worker_deployment_pollers',
  help: "Each worker deployment version's workers polling now; with Worker Versioning on",
  labelNames: ['build_id'] as const,
  registers: [metricsRegistry],
  collect: perVersion((v) => v.pollers),
});

new Gauge({
  name: 'partner_api_worker_deployment_routed',
  help: 'Worker deployment versions that take new runs (1: current or ramping); with Worker Versioning on',
  labelNames: ['build_id'] as const,
  registers: [metricsRegistry],
  collect: perVersion((v) => (v.status === 'current' || v.status === 'ramping' ? 1 : 0)),
});
