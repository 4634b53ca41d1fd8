import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import Ajv2020 from 'ajv/dist/2020';
import { parse } from 'yaml';
import { CONFIG_VARIABLES } from '../../src/config';
import { temporalConnectionOptions } from '../../src/temporal/connect-options';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';

type Service = { ports?: string[]; command?: string[]; environment?: Record<string, string>; profiles?: string[]; restart?: string; healthcheck?: { test?: string[] }; stop_grace_period?: string; networks?: string[] };

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

  it('publishes only the TLS proxy on every interface (not the API); no Temporal port; the UIs on the host loopback only', () => {
    const published = Object.entries(services).flatMap(([name, s]) => (s.ports ?? []).map((p) => [name, String(p)] as const));
    assert.deepEqual([...new Set(published.filter(([, p]) => !p.startsWith('127.0.0.1:')).map(([name]) => name))], ['proxy']);
    assert.equal(services.api.ports, undefined, 'the API is reached through the proxy only');
    assert.equal(services.temporal.ports, undefined, 'the Temporal frontend is not published');
    assert.ok(published.every(([, p]) => !p.endsWith(':7233')));
  });

  it('the proxy is Caddy with TLS for PUBLIC_HOST and HSTS, in front of the API; the API trusts its forwarded headers, and its links are https on that name', () => {
    const proxy = services.proxy as Service & { image?: string; volumes?: string[] };
    assert.match(proxy.image ?? '', /^caddy:\d+\.\d+\.\d+$/);
    assert.deepEqual((proxy.ports ?? []).map(String).sort(), ['443:443', '443:443/udp', '80:80']);
    assert.ok(proxy.volumes?.some((v) => v.startsWith('./deploy/caddy/Caddyfile:/etc/caddy/Caddyfile')));
    const caddyfile = readFileSync(path.join(root, 'deploy', 'caddy', 'Caddyfile'), 'utf8');
    assert.match(caddyfile, /^\{\$PUBLIC_HOST\} \{/m, 'a site on the public name: Caddy serves it with TLS (and redirects HTTP)');
    assert.match(caddyfile, /Strict-Transport-Security "max-age=\d+/);
    assert.match(caddyfile, /reverse_proxy \{\$API_UPSTREAM:api:3000\}/, 'the API on the compose network unless the test says otherwise');
    assert.match(caddyfile, /header_up X-Forwarded-For \{remote_host\}/, 'a client\'s own X-Forwarded-For is replaced, never passed on');
    assert.equal(env('api').TRUST_PROXY, 'true');
    assert.equal(env('worker').TRUST_PROXY, undefined);
    assert.match(env('api').PUBLIC_BASE_URL, /^https:\/\/\$\{PUBLIC_HOST/);
  });

  it('the everyday UI is read-only; the one that allows actions signs operators in first', () => {
    assert.equal(services['temporal-ui'].environment?.TEMPORAL_DISABLE_WRITE_ACTIONS, 'true');
    const operators = services['temporal-ui-operators'];
    assert.deepEqual(operators.profiles, ['operators']);
    assert.equal(operators.environment?.TEMPORAL_AUTH_ENABLED, 'true');
    assert.equal(operators.environment?.TEMPORAL_AUTH_TYPE, 'oidc');
    // It reaches Temporal only through the gate, which records every write with its operator.
    assert.equal(operators.environment?.TEMPORAL_ADDRESS, 'temporal-ui-gate:7236');
    assert.equal(operators.environment?.TEMPORAL_AUTH_USE_ID_TOKEN_AS_BEARER, 'true', 'the gate verifies the sign-in\'s ID token');
    assert.deepEqual(operators.networks, ['operators-ui'], 'no network on which Temporal itself answers');
    const gate = services['temporal-ui-gate'];
    assert.deepEqual(gate.command, ['node', 'dist/src/main/temporal-ui-gate.js']);
    assert.deepEqual(gate.profiles, ['operators']);
    assert.match(gate.environment?.TEMPORAL_UI_OIDC_AUDIENCE ?? '', /OPERATORS_OIDC_CLIENT_ID/);
    assert.match(gate.environment?.TEMPORAL_UI_OIDC_ISSUER ?? '', /OPERATORS_OIDC_/);
    assert.equal(gate.ports, undefined, 'the gate is not published');
  });

  it('Redis asks for a password, and the API gives it; the page limits have a Redis of their own that evicts, admission one that never does', () => {
    assert.ok(services.redis.command?.includes('--requirepass'));
    assert.match(env('api').REDIS_URL, /^redis:\/\/:\$\{REDIS_PASSWORD\}@redis:6379$/);
    assert.deepEqual(services.redis.command?.slice(services.redis.command.indexOf('--maxmemory-policy'), services.redis.command.indexOf('--maxmemory-policy') + 2), ['--maxmemory-policy', 'noeviction']);
    const limits = services['redis-limits'];
    assert.ok(limits.command?.includes('--requirepass'));
    assert.deepEqual(limits.command?.slice(limits.command.indexOf('--maxmemory-policy'), limits.command.indexOf('--maxmemory-policy') + 2), ['--maxmemory-policy', 'allkeys-lru']);
    assert.match(env('api').LIMITS_REDIS_URL, /^redis:\/\/:\$\{REDIS_PASSWORD\}@redis-limits:6379$/);
  });

  it('each part connects to Postgres as its own role: only the migration job as the owner, the search process read-only, Temporal on its own', () => {
    const role = (url: string) => /^postgres:\/\/([^:]+):/.exec(url)?.[1];
    assert.equal(role(env('api').DATABASE_URL), 'partner_api_app');
    assert.equal(role(env('worker').DATABASE_URL), 'partner_api_app');
    assert.equal(role(env('migrate').DATABASE_URL), 'partner_api_owner');
    assert.equal(role(env('search').DATABASE_URL), 'partner_api_search');
    assert.equal(role(env('temporal-ui-gate').DATABASE_URL), 'partner_api_ui_gate', 'the gate appends to the audit trail and nothing else');
    assert.equal(services.temporal.environment?.POSTGRES_USER, 'temporal');
    const init = readFileSync(path.join(root, 'deploy', 'postgres-init.sh'), 'utf8');
    assert.match(init, /GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO partner_api_app/);
    // The search role gets its one table by migration, never every table by default
    // (test/db/roles.test.ts connects as each role).
    assert.doesNotMatch(init, /ON TABLES TO partner_api_(search|ui_gate)/);
    assert.match(init, /GRANT USAGE ON SCHEMA public TO partner_api_app, partner_api_search/);
    assert.doesNotMatch(init, /SUPERUSER/);
  });

  it('every long-running service (the worker and the API included) comes back by itself and says whether it is healthy; only the one-shot jobs do not restart', () => {
    const oneShot = ['migrate', 'temporal-schema', 'temporal-setup'];
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

  it("a deploy's stop gives the worker longer than its own shutdown grace (activities under way finish), not Docker's 10 s", () => {
    const grace = /^(\d+)s$/.exec(services.worker.stop_grace_period ?? '');
    assert.ok(grace, `the worker has a stop_grace_period in seconds (${services.worker.stop_grace_period})`);
    const workerGrace = /shutdownGraceTime: '(\d+) seconds'/.exec(readFileSync(path.join(root, 'src/temporal/worker.ts'), 'utf8'));
    assert.ok(workerGrace);
    assert.ok(Number(grace[1]) >= Number(workerGrace[1]) + 10, `${grace[1]} s against the worker's ${workerGrace[1]} s`);
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
    for (const name of ['PartnerApi5xxRatio', 'PartnerApiSignedRequestsSlow', 'TemporalScheduleToStartLatency', 'WebhookDeliveriesFailing', 'OrdersAwaitingOperator', 'LedgerDoesNotReconcile', 'ReconcileNotRunning', 'WorkflowTaskFailures', 'RecoverySweepStalled', 'WorkerVersionWithoutPoller']) {
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

/** The Compose specification's JSON schema, as compose-go (what `docker compose` is built on) ships it, from the Go module proxy. */
const COMPOSE_GO = 'github.com/compose-spec/compose-go/v2@v2.16.2';

function composeSchema(): object {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'compose-schema-'));
  const out = execFileSync('go', ['mod', 'download', '-json', COMPOSE_GO], { cwd: dir, encoding: 'utf8', env: { ...process.env, GOFLAGS: '-mod=mod' }, timeout: 120_000 });
  return JSON.parse(readFileSync(path.join((JSON.parse(out) as { Dir: string }).Dir, 'schema', 'compose-spec.json'), 'utf8')) as object;
}

/** The file as Compose reads it: `${X:-default}` is its default, `${X:?message}` and `${X}` a value given, `$$` a dollar. */
function interpolated(text: string): string {
  return text.replace(/\$\$|\$\{([A-Z0-9_]+)(?::?-([^}]*)|:?\?[^}]*)?\}/g, (whole, _name: string | undefined, fallback: string | undefined) => (whole === '$$' ? '$' : fallback ?? 'given'));
}

describe('docker-compose.yml: current, valid, and read by the service', function () {
  this.timeout(3 * 60_000);
  const root = path.resolve(__dirname, '..', '..', '..');
  const text = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
  const compose = parse(interpolated(text), { merge: true }) as { services: Record<string, Service & { image?: string; build?: { target?: string } }> };

  it(`validates against the Compose specification's JSON schema (${COMPOSE_GO})`, () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    const validate = ajv.compile(composeSchema());
    assert.ok(validate(compose), JSON.stringify(validate.errors, null, 2));
    assert.equal(validate({ services: { api: { restart: 5, healthcheck: { retries: 'often' } } } }), false, 'the schema refuses a wrong file');
  });

  it('every variable it sets for an image of ours (and every one the Dockerfile sets) is one src/config.ts reads', () => {
    const ours = Object.entries(compose.services).filter(([, service]) => service.build);
    assert.deepEqual(ours.map(([name]) => name).sort(), ['api', 'migrate', 'search', 'temporal-setup', 'temporal-ui-gate', 'worker']);
    for (const [name, service] of ours) {
      for (const variable of Object.keys(service.environment ?? {})) assert.ok(CONFIG_VARIABLES.includes(variable), `${name} sets ${variable}, which src/config.ts does not read`);
    }
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    for (const line of dockerfile.split('\n').filter((l) => l.startsWith('ENV '))) {
      for (const variable of line.slice(4).trim().split(/\s+/).map((kv) => kv.split('=')[0])) {
        if (variable === 'NODE_ENV') continue; // Node's and npm's, read by config.ts too (production)
        assert.ok(CONFIG_VARIABLES.includes(variable), `the Dockerfile sets ${variable}, which src/config.ts does not read`);
      }
    }
  });

  it('Temporal Cloud by configuration: an API key or client certificates in the environment reach the connection (envconfig)', () => {
    const plain = temporalConnectionOptions('temporal:7233', {});
    assert.equal(plain.address, 'temporal:7233');
    assert.ok(!plain.apiKey && !plain.tls, 'plain gRPC without configuration');
    const cloud = temporalConnectionOptions('ns.acct.tmprl.cloud:7233', { TEMPORAL_API_KEY: 'key-123' });
    assert.equal(cloud.address, 'ns.acct.tmprl.cloud:7233');
    assert.equal(cloud.apiKey, 'key-123');
    assert.ok(cloud.tls, 'an API key turns TLS on');
    const mtls = temporalConnectionOptions('temporal:7233', { TEMPORAL_TLS_CLIENT_CERT_DATA: 'CERT', TEMPORAL_TLS_CLIENT_KEY_DATA: 'KEY' });
    const tls = mtls.tls as { clientCertPair?: { crt: Uint8Array; key: Uint8Array } };
    assert.equal(Buffer.from(tls.clientCertPair!.crt).toString(), 'CERT');
    assert.equal(Buffer.from(tls.clientCertPair!.key).toString(), 'KEY');
  });

  it('Temporal: temporalio/server after an admin-tools schema job, no auto-setup; the setup job is our own image, with the search attributes of the code and 30 days of retention', () => {
    const images = Object.values(compose.services).map((s) => s.image ?? '');
    assert.ok(!images.some((i) => i.includes('auto-setup')), 'temporalio/auto-setup is no longer built');
    assert.match(compose.services.temporal.image!, /^temporalio\/server:\d+\.\d+\.\d+$/);
    assert.match(compose.services['temporal-schema'].image!, /^temporalio\/admin-tools:\d+\.\d+\.\d+$/);
    assert.match(compose.services['temporal-schema'].command!.join(' '), /update-schema/);
    assert.deepEqual(compose.services['temporal-setup'].command, ['node', 'dist/src/main/temporal-setup.js']);
    assert.equal(compose.services['temporal-setup'].build?.target, 'api');
    // The list the job registers is the code's; the dev server test runs the job itself.
    assert.ok(ALL_SEARCH_ATTRIBUTES.length >= 5);
    assert.match(readFileSync(path.join(root, 'src/main/temporal-setup.ts'), 'utf8'), /RETENTION_DAYS = 30;/);
  });

  it('every image is pinned (a version, Postgres to a minor), and each of ours is built from its own Dockerfile target and tagged', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      assert.ok(service.image, `${name} names its image`);
      assert.match(service.image!, /:v?\d+\.\d+(\.\d+)?$/, `${name}: ${service.image} is pinned`);
      if (service.build) assert.equal(service.image, `partner-api/${service.build.target}:0.1.0`, name);
    }
    assert.match(compose.services.postgres.image!, /^postgres:\d+\.\d+$/);
    const targets = [...readFileSync(path.join(root, 'Dockerfile'), 'utf8').matchAll(/^FROM \S+ AS (\S+)$/gm)].map((m) => m[1]);
    for (const target of ['api', 'worker', 'search']) assert.ok(targets.includes(target), `Dockerfile target ${target}`);
  });
});
