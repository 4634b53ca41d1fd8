import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

type Service = { ports?: string[]; command?: string[]; environment?: Record<string, string>; profiles?: string[]; restart?: string; healthcheck?: { test?: string[] } };

/**
 * The production stack has no open doors (read as an attacker reaching the host would): only the
 * API is published; Temporal's frontend not at all, its UIs on loopback only; Redis and Postgres
 * need passwords, and no part of the service connects as a superuser or the schema's owner but
 * the migration job.
 */
describe('docker-compose.yml: no open doors in production', () => {
  const root = path.resolve(__dirname, '..', '..', '..');
  const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8')) as { services: Record<string, Service>; 'x-app-env': Record<string, string> };
  const services = compose.services;
  const env = (name: string) => ({ ...compose['x-app-env'], ...(services[name].environment ?? {}) });

  it('publishes only the API on every interface; no Temporal port; the UIs on the host loopback only', () => {
    const published = Object.entries(services).flatMap(([name, s]) => (s.ports ?? []).map((p) => [name, String(p)] as const));
    assert.deepEqual(published.filter(([, p]) => !p.startsWith('127.0.0.1:')).map(([name]) => name), ['api']);
    assert.equal(services.temporal.ports, undefined, 'the Temporal frontend is not published');
    assert.ok(published.every(([, p]) => !p.endsWith(':7233')));
  });

  it('the everyday UI is read-only; the one that allows actions signs operators in first', () => {
    assert.equal(services['temporal-ui'].environment?.TEMPORAL_DISABLE_WRITE_ACTIONS, 'true');
    const operators = services['temporal-ui-operators'];
    assert.deepEqual(operators.profiles, ['operators']);
    assert.equal(operators.environment?.TEMPORAL_AUTH_ENABLED, 'true');
    assert.equal(operators.environment?.TEMPORAL_AUTH_TYPE, 'oidc');
  });

  it('Redis asks for a password, and the API gives it', () => {
    assert.ok(services.redis.command?.includes('--requirepass'));
    assert.match(env('api').REDIS_URL, /^redis:\/\/:\$\{REDIS_PASSWORD\}@redis:6379$/);
  });

  it('each part connects to Postgres as its own role: only the migration job as the owner, the search process read-only, Temporal on its own', () => {
    const role = (url: string) => /^postgres:\/\/([^:]+):/.exec(url)?.[1];
    assert.equal(role(env('api').DATABASE_URL), 'partner_api_app');
    assert.equal(role(env('worker').DATABASE_URL), 'partner_api_app');
    assert.equal(role(env('migrate').DATABASE_URL), 'partner_api_owner');
    assert.equal(role(env('search').DATABASE_URL), 'partner_api_search');
    assert.equal(services.temporal.environment?.POSTGRES_USER, 'temporal');
    const init = readFileSync(path.join(root, 'deploy', 'postgres-init.sh'), 'utf8');
    assert.match(init, /GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO partner_api_app/);
    assert.match(init, /GRANT SELECT ON TABLES TO partner_api_search/);
    assert.doesNotMatch(init, /SUPERUSER/);
  });

  it('every long-running service (the worker and the API included) comes back by itself and says whether it is healthy; only the one-shot jobs do not restart', () => {
    const oneShot = ['migrate', 'temporal-setup'];
    for (const [name, service] of Object.entries(services)) {
      if (oneShot.includes(name)) {
        assert.equal(service.restart, 'no', name);
        continue;
      }
      assert.equal(service.restart, 'unless-stopped', `${name} has a restart policy`);
      assert.ok(service.healthcheck?.test?.length, `${name} has a health check`);
    }
    assert.equal(env('worker').WORKER_HEALTH_FILE, '/tmp/worker-health');
    assert.match(services.worker.healthcheck!.test!.join(' '), /worker-health/);
  });

  it('Prometheus scrapes the API and the worker on their unpublished metrics ports, with the alerts that matter', () => {
    const prometheus = services.prometheus as Service & { volumes?: string[] };
    assert.ok(prometheus.volumes?.some((v) => v.startsWith('./deploy/prometheus/alerts.yml:')));
    assert.deepEqual(prometheus.ports, ['127.0.0.1:9090:9090']);
    for (const name of ['api', 'worker']) {
      assert.equal(env(name).METRICS_HOST, '0.0.0.0', `${name} serves metrics on the compose network`);
      assert.ok(!(services[name].ports ?? []).some((p) => /946[45]/.test(p)), `${name}'s metrics port is not published`);
    }
    const config = parse(readFileSync(path.join(root, 'deploy/prometheus/prometheus.yml'), 'utf8')) as { scrape_configs: Array<{ dns_sd_configs: Array<{ names: string[]; port: number }> }> };
    const targets = config.scrape_configs.flatMap((c) => c.dns_sd_configs.map((d) => `${d.names[0]}:${d.port}`));
    assert.deepEqual(targets.sort(), ['api:9464', 'worker:9465']);
    const rules = parse(readFileSync(path.join(root, 'deploy/prometheus/alerts.yml'), 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
    const alerts = rules.groups.flatMap((g) => g.rules);
    for (const name of ['PartnerApi5xxRatio', 'PartnerApiSignedRequestsSlow', 'TemporalScheduleToStartLatency', 'WebhookDeliveriesFailing', 'OrdersAwaitingOperator', 'LedgerDoesNotReconcile', 'ReconcileNotRunning']) {
      assert.ok(alerts.some((a) => a.alert === name), name);
    }
    // Every metric an alert reads is one the service or the SDK serves (names checked against the code).
    for (const metric of new Set(alerts.flatMap((a) => a.expr.match(/\b(partner_api_\w+|temporal_\w+)/g) ?? []))) {
      const base = metric.replace(/_(bucket|count|sum)$/, '');
      if (base.startsWith('temporal_')) continue;
      const sources = ['metrics.ts', 'reconcile.ts'].map((f) => readFileSync(path.join(root, 'src/metrics', f), 'utf8')).join('\n');
      assert.match(sources, new RegExp(`name: '${base}'`), metric);
    }
  });
});
