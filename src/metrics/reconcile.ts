/**
 * The ledger's reconcile (the `admin reconcile` command's check) as a gauge of the worker's
 * metrics: differences per environment, for the `LedgerDoesNotReconcile` alert. A pass is one
 * REPEATABLE READ snapshot per environment; it runs in the background when a scrape finds the
 * last one older than five minutes, and each scrape serves the last result, so a scrape never
 * waits for it and Prometheus' interval does not set the database's load.
 */
import { Gauge } from 'prom-client';
import type { DataSource } from 'typeorm';
import { reconcile } from '../finance/reconcile';
import { openDisputes } from '../checkout/disputes';
import { overdueLiveRequests } from '../partners/onboarding';
import { unsentEmails } from '../mail/send';
import { metricsRegistry } from './metrics';
import type { Environment } from '../config';

const EVERY_MS = 5 * 60_000;
const ENVIRONMENTS: Environment[] = ['sandbox', 'live'];

/** Registers the gauges on `registry` (the process's by default), reading from `dataSource`. */
export function watchReconcile(dataSource: DataSource, registry = metricsRegistry): void {
  let startedAt = 0;
  let running: Promise<void> | undefined;
  const lastOk = new Gauge({
    name: 'partner_api_reconcile_last_run_timestamp_seconds',
    help: 'When the last reconcile pass of the ledger finished (Unix seconds); 0 before the first',
    registers: [registry],
  });
  const disputes = new Gauge({
    name: 'partner_api_card_disputes_open',
    help: 'Card disputes (chargebacks) of live checkout sales still open, by environment (admin disputes list names them); with the reconcile pass',
    labelNames: ['environment'] as const,
    registers: [registry],
  });
  const overdue = new Gauge({
    name: 'partner_api_live_requests_overdue',
    help: "Partners' requests for live access waiting for an operator's decision for more than 2 days (admin partner applications --status live_requested); with the reconcile pass",
    registers: [registry],
  });
  const emails = new Gauge({
    name: 'partner_api_emails_unsent',
    help: 'Emails not sent: pending for more than 15 minutes (the mail server refuses or is away; retried for 3 days), and failed (given up); with the reconcile pass',
    labelNames: ['state'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'partner_api_reconcile_differences',
    help: "Differences the last reconcile pass found between the ledger and the figures derived from it, by environment (admin reconcile --env … lists them); recomputed at most every 5 minutes",
    labelNames: ['environment'] as const,
    registers: [registry],
    collect() {
      if (running || Date.now() - startedAt < EVERY_MS || !dataSource.isInitialized) return;
      startedAt = Date.now();
      running = (async () => {
        try {
          for (const environment of ENVIRONMENTS) {
            this.set({ environment }, (await reconcile(dataSource, environment)).differences.length);
            disputes.set({ environment }, (await openDisputes(dataSource, environment)).length);
          }
          overdue.set(await overdueLiveRequests(dataSource));
          const unsent = await unsentEmails(dataSource);
          emails.set({ state: 'pending' }, unsent.pending);
          emails.set({ state: 'failed' }, unsent.failed);
          lastOk.set(Date.now() / 1000);
        } catch {
          // Postgres away: the last figures stay; the readiness and 5xx alerts say why.
        } finally {
          running = undefined;
        }
      })();
    },
  });
}
