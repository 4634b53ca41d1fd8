/**
 * `npm run bench:orders` (with `npm start` running in another terminal): recorded orders per
 * second through the signed API, next to the rate at which a bare Temporal client starts
 * workflows on the same server, and their ratio.
 *
 * It issues its own sandbox credential (rate limit raised for the run), quotes N listed names
 * (not timed), records N orders at the chosen concurrency (timed), then refunds them so the
 * names go back on the market. Options: BENCH_ORDERS (default 200), BENCH_CONCURRENCY (16).
 */
import { serviceClientInterceptors } from '../src/temporal/request-context';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../src/config';
import { CredentialService } from '../src/auth/credentials';
import { SecretBox } from '../src/auth/secret-box';
import { SCOPES } from '../src/auth/scopes';
import { PartnerClient } from '../src/client/partner-client';
import { findOrCreatePartner } from '../src/partners/partners';
import { setQuotas } from '../src/partners/quotas';
import { openProjectDatabase, resolveMasterKey } from '../src/main/runtime';
import { cpuSecondsByGroup } from './support';

/** Where the CPU goes, per process group of `npm start` (its API process and its worker child counted together). */
const GROUPS = {
  'API + worker': /dev-stack\.js|dist\/src\/main\/(api|worker)\.js/,
  'Temporal server': /temporal.*server start-dev|temporal-server/,
  Postgres: /postgres/,
  'this client': new RegExp(`^\\S*node\\S* .*bench/orders\\.js`),
};

/** `work` timed, with the CPU ms each group spent per item meanwhile. */
async function measured(items: number, work: () => Promise<number>): Promise<{ seconds: number; cpuMsPerItem: Record<string, number> }> {
  const before = cpuSecondsByGroup(GROUPS);
  const seconds = await work();
  const after = cpuSecondsByGroup(GROUPS);
  return { seconds, cpuMsPerItem: Object.fromEntries(Object.keys(GROUPS).map((g) => [g, ((after[g] - before[g]) * 1000) / items])) };
}

const cpuLine = (cpu: Record<string, number>) => Object.entries(cpu).map(([g, ms]) => `${g} ${ms.toFixed(2)}`).join(', ');

const settings = { orders: Number(process.env.BENCH_ORDERS ?? 200), concurrency: Number(process.env.BENCH_CONCURRENCY ?? 16) };

async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const baseUrl = config.http.publicBaseUrl ?? `http://${config.http.host}:${config.http.port}`;
  const address = config.temporal.address ?? `127.0.0.1:${config.temporal.devServerPort}`;
  const { dataSource, postgres } = await openProjectDatabase(config, () => undefined);
  const credentials = new CredentialService(dataSource, new SecretBox(resolveMasterKey(config)));
  const { partner } = await findOrCreatePartner(dataSource, 'benchmark');
  // Its quotes are held at once: the benchmark partner's quota covers them (CONTRACT §15).
  await setQuotas(dataSource, config.quotas, partner.id, 'sandbox', { activeQuotes: Math.max(100, settings.orders) });
  const issued = await credentials.issue({ partnerId: partner.id, environment: 'sandbox', scopes: [...SCOPES], rateLimitPerSecond: 100_000 });
  const api = new PartnerClient(baseUrl, { keyId: issued.keyId, secret: issued.secret });

  const names = (await dataSource.query(`SELECT name FROM domains WHERE environment = 'sandbox' AND status = 'listed' ORDER BY random() LIMIT $1`, [settings.orders])) as Array<{ name: string }>;
  if (names.length < settings.orders) throw new Error(`only ${names.length} listed sandbox names left`);
  process.stderr.write(`quoting ${names.length} names…\n`);
  const quotes: Array<{ quote_id: string; price_cents: number }> = [];
  await pool(names, settings.concurrency, async ({ name }) => {
    const q = await api.post<{ quote_id: string; price_cents: number }>('/api/partner/v1/quotes', { domain: name });
    if (q.status !== 201) throw new Error(`quote ${name}: ${q.text}`);
    quotes.push(q.body);
  });

  process.stderr.write(`recording ${quotes.length} orders at concurrency ${settings.concurrency}…\n`);
  const orderIds: string[] = [];
  const ordersRun = await measured(quotes.length, () => pool(quotes, settings.concurrency, async (q) => {
    const o = await api.post<{ public_id: string }>('/api/partner/v1/orders', { quote_id: q.quote_id, external_payment_ref: 'bench_stall_transfer', sale_price_cents: q.price_cents }, { headers: { 'Idempotency-Key': randomUUID() } });
    if (o.status !== 201) throw new Error(`order: ${o.text}`);
    orderIds.push(o.body.public_id);
  }));
  const orderSeconds = ordersRun.seconds;

  process.stderr.write(`starting ${settings.orders} bare workflows…\n`);
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace: config.temporal.namespace, interceptors: serviceClientInterceptors() });
  const bareIds = Array.from({ length: settings.orders }, () => `bench-bare-${randomUUID()}`);
  const bareRun = await measured(bareIds.length, () => pool(bareIds, settings.concurrency, async (workflowId) => {
    await client.workflow.start('benchBareWorkflow', { workflowId, taskQueue: `bench-bare-${process.pid}`, args: [] });
  }));
  const bareSeconds = bareRun.seconds;

  process.stderr.write('cleaning up (refunds relist the names; bare workflows terminated)…\n');
  await pool(orderIds, settings.concurrency, async (id) => {
    await api.post('/api/partner/v1/refunds', { order_id: id, reason: 'benchmark' });
  });
  await pool(bareIds, settings.concurrency, async (id) => {
    await client.workflow.getHandle(id).terminate('benchmark done').catch(() => undefined);
  });
  await credentials.revoke(issued.keyId);

  const ordersPerSecond = orderIds.length / orderSeconds;
  const startsPerSecond = bareIds.length / bareSeconds;
  process.stdout.write(
    [
      `orders recorded through the signed API: ${ordersPerSecond.toFixed(1)}/s (${orderIds.length} in ${orderSeconds.toFixed(2)} s)`,
      `bare Temporal workflow starts:          ${startsPerSecond.toFixed(1)}/s (${bareIds.length} in ${bareSeconds.toFixed(2)} s)`,
      `ratio (orders / bare starts):           ${(ordersPerSecond / startsPerSecond).toFixed(2)}`,
      `CPU ms per order:       ${cpuLine(ordersRun.cpuMsPerItem)}`,
      `CPU ms per bare start:  ${cpuLine(bareRun.cpuMsPerItem)}`,
      '',
    ].join('\n'),
  );
  await connection.close();
  await dataSource.destroy();
  await postgres.stop();
}

main().catch((err) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
