/**
 * `npm run bench:clicks`: link redirects per second with click recording (GET /r/<code>: link
 * lookup, bot check, attribution cookie, the click queued and written in batches), next to a bare
 * Koa app answering the same 302, in one run, in one process, on the benchmark's own embedded
 * Postgres. Target: ≥ 50 % of the bare rate. At the end it checks that every counted redirect
 * was stored exactly once (a benchmark of a counter that loses counts would be worthless).
 *
 * Options (env): BENCH_SECONDS (5 per round), BENCH_ROUNDS (2, interleaved), BENCH_CONCURRENCY
 * (16 keep-alive connections), BENCH_DATABASE_URL (default: an embedded Postgres in a temp dir).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Koa from 'koa';
import { createApp } from '../src/api/app';
import { freePort } from '../src/main/child-process';
import { listen } from './support';
import { CredentialService } from '../src/auth/credentials';
import { SecretBox } from '../src/auth/secret-box';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/db/data-source';
import { Partner } from '../src/db/entities/partner';
import { ReferralClick } from '../src/db/entities/referral';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres';
import type { DomainSearch } from '../src/discovery/search';
import { createLogger } from '../src/logger';
import { QuoteTokenSigner } from '../src/orders/quote-token';
import { findOrCreatePartner } from '../src/partners/partners';
import { ClickRecorder } from '../src/referral/clicks';
import { createLink } from '../src/referral/links';

const settings = {
  seconds: Number(process.env.BENCH_SECONDS ?? 5),
  rounds: Number(process.env.BENCH_ROUNDS ?? 2),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 16),
  databaseUrl: process.env.BENCH_DATABASE_URL,
};
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
const say = (m: string) => process.stderr.write(`${m}\n`);

/** `concurrency` keep-alive connections asking `path` for `seconds`; only 302 answers count. */
async function load(port: number, path: string): Promise<{ rps: number; p50: number; p99: number; cpuMsPerRequest: number; count: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: settings.concurrency });
  const latencies: number[] = [];
  const until = Date.now() + settings.seconds * 1000;
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: settings.concurrency }, async () => {
      while (Date.now() < until) {
        const t = process.hrtime.bigint();
        const status = await new Promise<number>((resolve, reject) => {
          const req = http.get({ host: '127.0.0.1', port, path, agent, headers: { 'user-agent': UA } }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', reject);
        });
        if (status === 302) latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99), cpuMsPerRequest: (used.user + used.system) / 1000 / Math.max(1, latencies.length), count: latencies.length };
}

async function main(): Promise<void> {
  let postgres: RunningPostgres;
  let dir: string | undefined;
  if (settings.databaseUrl) postgres = { url: settings.databaseUrl, stop: async () => undefined };
  else {
    dir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-bench-clicks-'));
    postgres = await startEmbeddedPostgres(dir, await freePort(), say);
  }
  try {
    const dataSource = await openDatabase(postgres.url);
    const { partner } = await findOrCreatePartner(dataSource, `bench-clicks-${Date.now()}`);
    await dataSource.getRepository(Partner).update({ id: partner.id }, { affiliateAccountId: `aff-bench-${Date.now()}` });
    const link = await createLink(dataSource, { partnerId: partner.id, environment: 'sandbox', kind: 'generic' });
    const secretBox = new SecretBox(Buffer.alloc(32, 9));
    const clicks = new ClickRecorder(dataSource);
    const noSearch: DomainSearch = { search: async () => [] };
    const api = await listen(
      createApp({
        config: loadConfig({ ...process.env, LOG_LEVEL: 'silent' }),
        dataSource,
        credentials: new CredentialService(dataSource, secretBox),
        secretBox,
        search: noSearch,
        workflows: { client: undefined as never, taskQueue: 'bench' },
        quoteSigner: QuoteTokenSigner.fromPem(QuoteTokenSigner.generatePem()),
        logger: createLogger('silent'),
        temporalReady: async () => undefined,
        clickRecorder: clicks,
      }).callback(),
    );
    const bareApp = new Koa();
    bareApp.use((ctx) => {
      ctx.status = 302;
      ctx.redirect('/search?env=sandbox');
    });
    const bare = await listen(bareApp.callback());

    const results: Record<string, Array<Awaited<ReturnType<typeof load>>>> = { bare: [], link: [] };
    for (let round = 0; round < settings.rounds; round++) {
      say(`round ${round + 1}/${settings.rounds}…`);
      results.bare.push(await load(bare.port, '/r/anything'));
      results.link.push(await load(api.port, `/r/${link.code}`));
    }
    await clicks.flush();
    const stored = await dataSource.getRepository(ReferralClick).countBy({ linkId: link.id });
    const counted = results.link.reduce((sum, r) => sum + r.count, 0);
    for (const { server } of [api, bare]) {
      server.closeAllConnections();
      server.close();
    }
    await dataSource.destroy();

    const best = (rows: Array<Awaited<ReturnType<typeof load>>>) => rows.reduce((a, b) => (b.rps > a.rps ? b : a));
    const b = best(results.bare);
    const l = best(results.link);
    const row = (name: string, r: typeof b) => `| ${name} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.cpuMsPerRequest.toFixed(3)} |`;
    process.stdout.write(
      [
        `bench:clicks — ${settings.concurrency} keep-alive connections, ${settings.seconds} s per round, best of ${settings.rounds} (client in the same process)`,
        '| target | req/s | p50 ms | p99 ms | CPU ms/req (process) |',
        '|---|---|---|---|---|',
        row('bare Koa 302', b),
        row('GET /r/<code> with click recording', l),
        `ratio link/bare: ${(l.rps / b.rps).toFixed(2)} (target ≥ 0.50)`,
        `clicks counted ${counted}, stored ${stored}${stored === counted ? ' (every one, once)' : ' — MISMATCH'}`,
        `RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
        '',
      ].join('\n'),
    );
    if (stored !== counted) process.exitCode = 1;
  } finally {
    await postgres.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`bench:clicks: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
