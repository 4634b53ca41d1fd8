/**
 * The chaos run (issue: nothing lost when any part dies), used by `npm run chaos` (bench/chaos.ts)
 * and, shorter, by the suite (test/chaos/chaos.test.ts).
 *
 * It starts a whole `npm start` of its own (a fresh DATA_DIR, free ports) and a second API process
 * beside it (sharing Postgres, Redis, Temporal and the search process), makes partners with
 * webhook endpoints on a local receiver, and runs the load at a set concurrency: orders (quote, then
 * order with an Idempotency-Key), hosted checkouts paid with the sandbox card, refunds, brokerage
 * cases moved by an operator (the admin CLI) and referral clicks. Meanwhile it kills with SIGKILL,
 * one at a time at random moments, each of Postgres, Redis, the Temporal dev server, the search
 * process, the worker and the second API process, and waits for each to be back before the next.
 * The partners' client spreads requests over both API processes and retries connection errors,
 * timeouts, 5xx (a request signed before the replay store restarted among them) and 429, always
 * with the same Idempotency-Key (and the same form, for a checkout).
 *
 * Afterwards it checks: no order lost (every order a partner was told of exists) or doubled (no
 * order the partners were not told of, no name sold twice), none stuck (each reaches a final
 * status), every event in `/events` once and delivered to the receiver (deduplicated by id) with
 * nothing else delivered, `admin reconcile` clean, no nonce admitted twice across a Redis restart
 * (a request signed and sent before the kill is refused when replayed after it), and that Ctrl-C
 * stops the stack cleanly. It measures, per kind of part killed, how long signed requests
 * answered 503 and how long until orders flowed again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { SCOPES } from '../src/auth/scopes';
import { CredentialService } from '../src/auth/credentials';
import { SecretBox } from '../src/auth/secret-box';
import { PartnerClient, type PartnerResponse } from '../src/client/partner-client';
import { decodeMasterKey, loadConfig } from '../src/config';
import { openDatabase } from '../src/db/data-source';
import { embeddedUrl } from '../src/db/embedded-postgres';
import { Domain } from '../src/db/entities/domain';
import { Order } from '../src/db/entities/order';
import { ReferralClick } from '../src/db/entities/referral';
import { Supervisor } from '../src/main/supervise';
import { freePorts } from '../src/main/child-process';
import { createPartner } from '../src/partners/partners';
import { setQuotas } from '../src/partners/quotas';
import { FINAL_ORDER_STATUSES } from '../workflows/messages';
import { freshPrebuiltBundle } from '../src/temporal/worker';
import { webhookReceiver } from './webhook-receiver';

export const PARTS = ['Postgres', 'Redis', 'Temporal server', 'search process', 'worker', 'second API'] as const;
export type Part = (typeof PARTS)[number];

export interface ChaosSettings {
  /** Orders placed through the signed API (at least; more while kills remain). */
  orders: number;
  /** Kills of each part. */
  killsPerPart: number;
  concurrency: number;
  partners: number;
  /** How long to wait, after the load, for every event to reach the receiver. */
  deliveryWaitMs: number;
  log: (message: string) => void;
  /** A search data directory whose sandbox embeddings the stack starts with (Stack's seedEmbeddings). */
  seedEmbeddings?: string;
  /** The worker loads `npm test`'s prebuilt workflow bundle (Stack's prebuiltBundle): the tests only. */
  prebuiltBundle?: boolean;
}

export interface KillRecord {
  part: Part;
  killedAt: number;
  backAt?: number;
  /** Seconds from the kill to the last 503 (or refused connection) a partner met because of it. */
  unavailableSeconds: number;
  /** Seconds from the kill to the first order recorded after it. */
  ordersBackSeconds?: number;
}

export interface ChaosReport {
  ok: boolean;
  problems: string[];
  seconds: number;
  kills: KillRecord[];
  counts: { orders: number; checkouts: number; refunds: number; refundsRefused: number; brokerageMoves: number; clicks: number; clicksStored: number; events: number; deliveries: number; deliveriesFailedOnPurpose: number; duplicateDeliveries: number; retries: number; quotesSkipped: number; replaysRefused: number };
  stoppedCleanly: boolean;
}

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
const DEV_STACK = path.join(PROJECT_ROOT, 'dist', 'src', 'main', 'dev-stack.js');
const API_ENTRY = path.join(PROJECT_ROOT, 'dist', 'src', 'main', 'api.js');
const ADMIN = path.join(PROJECT_ROOT, 'dist', 'src', 'admin', 'cli.js');
const BROWSER = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36' };
const SANDBOX_CARD = '4242424242424242';
const API = '/api/partner/v1';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const jitter = (ms: number) => ms / 2 + Math.random() * ms;

/** Children of `pid` whose command line matches (from /proc). */
function childrenOf(pid: number, pattern: RegExp): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== pid) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (pattern.test(cmdline)) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The whole `npm start`, as a child (fresh data, free ports): its lines kept with their times. Also used by tests that need the real stack. */
export class Stack {
  readonly lines: Array<{ at: number; text: string }> = [];
  private child!: ChildProcess;
  exitCode?: number | null;
  private exited!: Promise<number | null>;
  readonly ports = { api: 0, pg: 0, temporal: 0, ui: 0, metrics: 0, workerMetrics: 0, mailSmtp: 0, mailUi: 0 };

  /**
   * `env`: added to the stack's environment (tracing's OTEL_ variables, say). `seedEmbeddings`: a
   * search data directory whose sandbox embeddings are copied in first, so that the stack's
   * search process does not embed the sandbox inventory again (the tests' own, on this machine).
   * `prebuiltBundle`: the worker loads the workflow bundle `npm test`'s pretest built, when it is
   * current, instead of bundling at each start (the tests'; the benchmark measures a real start).
   * `entry`: the dev stack of another release's checkout (its dist/src/main/dev-stack.js).
   */
  constructor(
    readonly dataDir: string,
    readonly env: Record<string, string> = {},
    readonly options: { seedEmbeddings?: string; prebuiltBundle?: boolean; entry?: string } = {},
  ) {}

  get pid(): number {
    return this.child.pid!;
  }

  async start(log: (m: string) => void): Promise<void> {
    const keys = Object.keys(this.ports) as Array<keyof Stack['ports']>;
    const ports = await freePorts(keys.length);
    keys.forEach((key, i) => (this.ports[key] = ports[i]));
    const config = loadConfig();
    if (this.options.seedEmbeddings) {
      for (const file of existsSync(path.join(this.options.seedEmbeddings, 'embeddings')) ? readdirSync(path.join(this.options.seedEmbeddings, 'embeddings')) : []) {
        if (!file.startsWith('sandbox-') || !file.endsWith('.log')) continue;
        mkdirSync(path.join(this.dataDir, 'embeddings'), { recursive: true });
        copyFileSync(path.join(this.options.seedEmbeddings, 'embeddings', file), path.join(this.dataDir, 'embeddings', file));
      }
    }
    // The workflow bundle `npm test`'s pretest built, when it is current: the worker then starts
    // (and starts again after a kill) without bundling.
    const bundle = this.options.prebuiltBundle ? freshPrebuiltBundle() : undefined;
    // Its own parts only: nothing named by this shell's environment.
    const inherited = { ...process.env };
    for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'REDIS_URL', 'SEARCH_URL', 'PUBLIC_BASE_URL', 'MASTER_KEY', 'QUOTE_SIGNING_KEY', 'SMTP_URL']) delete inherited[name];
    // `entry`: another release's dev stack (bench/upgrade-check.ts), else this one's.
    this.child = spawn(process.execPath, [this.options.entry ?? DEV_STACK], {
      env: {
        ...inherited,
        DATA_DIR: this.dataDir,
        TOOL_CACHE_DIR: config.toolCacheDir,
        PORT: String(this.ports.api),
        HOST: '127.0.0.1',
        EMBEDDED_PG_PORT: String(this.ports.pg),
        TEMPORAL_PORT: String(this.ports.temporal),
        TEMPORAL_UI_PORT: String(this.ports.ui),
        METRICS_PORT: String(this.ports.metrics),
        WORKER_METRICS_PORT: String(this.ports.workerMetrics),
        MAILPIT_SMTP_PORT: String(this.ports.mailSmtp),
        MAILPIT_UI_PORT: String(this.ports.mailUi),
        LOG_LEVEL: 'error',
        ...(bundle ? { WORKFLOW_BUNDLE: bundle } : {}),
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve((this.exitCode = code))));
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      let carry = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (carry + chunk).split('\n');
        carry = parts.pop()!;
        for (const text of parts) {
          this.lines.push({ at: Date.now(), text });
          if (text.startsWith('[start]')) log(`  npm start: ${text.slice(8)}`);
          // An error the service logged (a 500's cause, say): shown, cut short.
          else if (text.includes('"level":50')) log(`  npm start logged an error: ${text.slice(0, 1500)}`);
        }
      });
    }
    const deadline = Date.now() + 10 * 60_000;
    while (!this.lines.some((l) => l.text.includes('Partner API is up.'))) {
      if (this.exitCode !== undefined) throw new Error(`npm start exited (${this.exitCode}):\n${this.lines.slice(-20).map((l) => l.text).join('\n')}`);
      if (Date.now() > deadline) throw new Error('npm start did not come up within 10 minutes');
      await sleep(200);
    }
  }

  /** The sandbox credential `npm start` printed. */
  sandboxCredential(): { keyId: string; secret: string } {
    const printed = this.lines.map((l) => l.text).join('\n');
    return { keyId: /PARTNER_KEY_ID=(\S+)/.exec(printed)![1]!, secret: /PARTNER_SECRET=(\S+)/.exec(printed)![1]! };
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.ports.api}`;
  }

  get databaseUrl(): string {
    return embeddedUrl(this.ports.pg);
  }

  get temporalAddress(): string {
    return `127.0.0.1:${this.ports.temporal}`;
  }

  /** The operators' command line (this checkout's) against this stack: its exit code and output. */
  admin(...args: string[]): Promise<{ code: number | null; out: string }> {
    const env = { ...process.env, DATABASE_URL: this.databaseUrl, TEMPORAL_ADDRESS: this.temporalAddress, DATA_DIR: this.dataDir, TEMPORAL_NAMESPACE: 'default', LOG_LEVEL: 'error' };
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [ADMIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      child.once('exit', (code) => resolve({ code, out }));
    });
  }

  /** The pid of a part now, or undefined while it is down. */
  pidOf(part: Exclude<Part, 'second API'>): number | undefined {
    if (part === 'Postgres') {
      const file = path.join(this.dataDir, 'postgres', 'postmaster.pid');
      const pid = existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : NaN;
      return Number.isInteger(pid) && alive(pid) ? pid : undefined;
    }
    const pattern = { Redis: /redis-server/, 'Temporal server': /server start-dev/, 'search process': /main\/search\.js/, worker: /main\/worker\.js/ }[part];
    return childrenOf(this.pid, pattern)[0];
  }

  /** The log name npm start gives a part, in "… is back". */
  static logName(part: Exclude<Part, 'second API'>): string {
    return { Postgres: 'Postgres', Redis: 'Redis', 'Temporal server': 'the Temporal dev server', 'search process': 'the search process', worker: 'the worker' }[part];
  }

  backSince(part: Exclude<Part, 'second API'>, since: number): number | undefined {
    const name = Stack.logName(part);
    return this.lines.find((l) => l.at >= since && l.text.startsWith(`[start] ${name} is back`))?.at;
  }

  /** Ctrl-C, as a developer would: resolves with its exit code (undefined if it did not stop in time). */
  async interrupt(timeoutMs = 180_000): Promise<number | null | undefined> {
    this.child.kill('SIGINT');
    return Promise.race([this.exited, sleep(timeoutMs).then(() => undefined)]);
  }

  kill(): void {
    if (this.exitCode === undefined) this.child.kill('SIGKILL');
  }
}

/** A partner's view: its credential, webhook secret and link, and a client over both API processes. */
interface ChaosPartner {
  name: string;
  partnerId: string;
  clients: PartnerClient[];
  webhookSecret: string;
  linkUrl?: string;
}

/** Every answer a partner got (or a connection that failed), for the restart costs. */
interface Observed {
  at: number;
  status: number | 'error';
}

export async function runChaos(settings: ChaosSettings): Promise<ChaosReport> {
  const started = Date.now();
  const { log } = settings;
  const problems: string[] = [];
  const counts: ChaosReport['counts'] = { orders: 0, checkouts: 0, refunds: 0, refundsRefused: 0, brokerageMoves: 0, clicks: 0, clicksStored: 0, events: 0, deliveries: 0, deliveriesFailedOnPurpose: 0, duplicateDeliveries: 0, retries: 0, quotesSkipped: 0, replaysRefused: 0 };
  const observed: Observed[] = [];
  /** Answers 500 met (the client retried them, but each is a failure: a part down is 503). */
  const internalErrors: string[] = [];
  const orderTimes: number[] = [];
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'partner-api-chaos-'));
  const stack = new Stack(dataDir, {}, { seedEmbeddings: settings.seedEmbeddings, prebuiltBundle: settings.prebuiltBundle });
  let secondApi: Supervisor | undefined;
  let receiver: http.Server | undefined;
  let db: DataSource | undefined;
  const kills: KillRecord[] = [];
  let stoppedCleanly = false;
  try {
    log(`starting npm start in ${dataDir}`);
    await stack.start(log);
    const masterKeyText = readFileSync(path.join(dataDir, 'master.key'), 'utf8').trim();
    const quotePem = readFileSync(path.join(dataDir, 'quote-signing-key.pem'), 'utf8');

    // The second API process, beside npm start's, supervised here.
    const [api2Port, api2MetricsPort] = await freePorts(2);
    const api2Url = `http://127.0.0.1:${api2Port}`;
    let api2Child: ChildProcess | undefined;
    secondApi = new Supervisor(
      'the second API process',
      async () => {
        const child = spawn(process.execPath, [API_ENTRY], {
          env: {
            ...process.env,
            DATABASE_URL: stack.databaseUrl,
            TEMPORAL_ADDRESS: stack.temporalAddress,
            REDIS_URL: path.join(dataDir, 'redis', 'redis.sock'),
            SEARCH_URL: `unix:${path.join(dataDir, 'search.sock')}`,
            MASTER_KEY: masterKeyText,
            QUOTE_SIGNING_KEY: quotePem,
            PORT: String(api2Port),
            HOST: '127.0.0.1',
            METRICS_PORT: String(api2MetricsPort),
            DATA_DIR: dataDir,
            WEBHOOK_ALLOW_LOOPBACK: 'true',
            LOG_LEVEL: 'error',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        // Its errors shown as npm start's are (a 500's cause, say); the rest dropped.
        for (const stream of [child.stdout!, child.stderr!]) {
          stream.setEncoding('utf8');
          stream.on('data', (chunk: string) => {
            for (const line of chunk.split('\n')) if (line.includes('"level":50')) log(`  the second API logged an error: ${line.slice(0, 1500)}`);
          });
        }
        const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `code ${code}`)));
        const deadline = Date.now() + 60_000;
        for (;;) {
          const up = await fetch(`${api2Url}/healthz`).then((r) => r.ok, () => false);
          if (up) break;
          if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited (${await exited}) while starting`);
          if (Date.now() > deadline) {
            child.kill('SIGKILL');
            throw new Error('not listening within 60 s');
          }
          await sleep(200);
        }
        api2Child = child;
        return { exited, stop: async () => (child.kill('SIGTERM'), void (await exited)), detail: `pid ${child.pid}` };
      },
      { log: (m) => log(`  ${m}`), maxBackoffMs: 5_000 },
    );
    await secondApi.run();
    const apiUrls = [stack.apiUrl, api2Url];

    // Partners, their credentials, quotas and tracking links.
    db = await openDatabase(stack.databaseUrl, { poolSize: 4 });
    const dataSource = db;
    const credentials = new CredentialService(dataSource, new SecretBox(decodeMasterKey(masterKeyText)), 0);
    const config = loadConfig();
    const partners: ChaosPartner[] = [];
    for (let i = 0; i < settings.partners; i++) {
      const partner = await createPartner(dataSource, `chaos-${i}-${randomUUID().slice(0, 8)}`, { affiliateAccountId: `aff-chaos-${i}` });
      await setQuotas(dataSource, config.quotas, partner.id, 'sandbox', { activeQuotes: 100_000, openCases: 100_000 });
      const issued = await credentials.issue({ partnerId: partner.id, environment: 'sandbox', scopes: [...SCOPES], rateLimitPerSecond: 1_000 });
      partners.push({
        name: partner.name,
        partnerId: partner.id,
        clients: apiUrls.map((url) => new PartnerClient(url, { keyId: issued.keyId, secret: issued.secret })),
        webhookSecret: `whsec_${randomUUID().replace(/-/g, '')}`,
      });
    }

    // The webhook receiver: verifies each delivery, records its event id, and answers 500 to a
    // third of them (never twice running for one event), sometimes after recording it.
    const received = new Map<string, Map<string, number>>();
    const failedOnce = new Set<string>();
    const partnerAt = (path: string) => partners.find((p) => path === `/hooks/${p.partnerId}`);
    const hooks = await webhookReceiver(
      (path) => partnerAt(path)?.webhookSecret,
      (delivery) => {
        const partner = partnerAt(delivery.path)!;
        if ('error' in delivery) {
          problems.push(`a delivery to ${partner.name} did not verify: ${delivery.error}`);
          return 400;
        }
        const { id } = delivery;
        counts.deliveries++;
        const fail = !failedOnce.has(id) && Math.random() < 1 / 3;
        if (fail) failedOnce.add(id);
        if (!fail || Math.random() < 0.5) {
          const seen = received.get(partner.partnerId) ?? new Map<string, number>();
          received.set(partner.partnerId, seen);
          if (seen.has(id)) counts.duplicateDeliveries++;
          seen.set(id, (seen.get(id) ?? 0) + 1);
        }
        if (fail) counts.deliveriesFailedOnPurpose++;
        return fail ? 500 : 200;
      },
    );
    receiver = hooks.server;
    const receiverUrl = hooks.url;

    /** One partner request, retried as a careful partner's client does. */
    let turn = 0;
    const call = async <T = unknown>(p: ChaosPartner, method: string, pathAndQuery: string, body?: unknown, idempotencyKey?: string): Promise<PartnerResponse<T>> => {
      const deadline = Date.now() + 5 * 60_000;
      for (let attempt = 0; ; attempt++) {
        const client = p.clients[turn++ % p.clients.length];
        let res: PartnerResponse<T> | undefined;
        let why = '';
        try {
          res = await client.request<T>(method, pathAndQuery, { body, headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : undefined, timeoutMs: 20_000 });
          observed.push({ at: Date.now(), status: res.status });
          // Retried like any 5xx, but never acceptable: a part down must answer 503.
          if (res.status === 500 && internalErrors.push(`${method} ${pathAndQuery.split('?')[0]}: ${res.text.slice(0, 160)}`) <= 5) log(`500 from ${method} ${pathAndQuery}: ${res.text.slice(0, 200)}`);
        } catch (err) {
          why = (err as Error).message;
          observed.push({ at: Date.now(), status: 'error' });
        }
        const retryable = !res || res.status >= 500 || res.status === 429;
        if (!retryable) return res!;
        if (Date.now() > deadline) throw new Error(`gave up on ${method} ${pathAndQuery} after 5 minutes: ${res ? `${res.status} ${res.text.slice(0, 200)}` : why}`);
        counts.retries++;
        const retryAfter = Number(res?.headers.get('retry-after'));
        await sleep(Math.min(retryAfter > 0 ? retryAfter * 1000 : jitter(200 * 2 ** Math.min(attempt, 4)), 5_000));
      }
    };

    for (const p of partners) {
      const hook = await call(p, 'PUT', '/api/partner/webhooks', { url: `${receiverUrl}/hooks/${p.partnerId}`, secret: p.webhookSecret });
      if (hook.status !== 200) throw new Error(`webhook endpoint: ${hook.status} ${hook.text}`);
      const link = await call<{ url: string }>(p, 'POST', `${API}/links`, { kind: 'generic' });
      if (link.status !== 201) throw new Error(`link: ${link.status} ${link.text}`);
      p.linkUrl = link.body.url;
    }

    // Names for the load, each used by one task.
    const names = (
      await dataSource.getRepository(Domain).createQueryBuilder('d').select('d.name', 'name').where("d.environment = 'sandbox' AND d.status = 'listed'").orderBy('random()').limit(settings.orders * 3 + 2_000).getRawMany<{ name: string }>()
    ).map((r) => r.name);
    const nextName = () => names.pop();

    const known: Array<{ partner: ChaosPartner; orderId: string; domain: string }> = [];
    const admin = (...args: string[]) => stack.admin(...args);

    const placeOrder = async (p: ChaosPartner): Promise<void> => {
      const domain = nextName();
      if (!domain) return;
      const quote = await call<{ quote_id: string; price_cents: number }>(p, 'POST', `${API}/quotes`, { domain });
      if (quote.status !== 201) {
        // A quote whose answer was lost and retried finds the name reserved: no order was at stake.
        counts.quotesSkipped++;
        return;
      }
      const key = randomUUID();
      const order = await call<{ public_id: string }>(p, 'POST', `${API}/orders`, { quote_id: quote.body.quote_id, external_payment_ref: `chaos_${key}`, sale_price_cents: quote.body.price_cents }, key);
      if (order.status !== 201 && order.status !== 200) {
        problems.push(`order for ${domain} refused: ${order.status} ${order.text.slice(0, 200)}`);
        return;
      }
      known.push({ partner: p, orderId: order.body.public_id, domain });
      orderTimes.push(Date.now());
      counts.orders++;
    };

    const refundOne = async (p: ChaosPartner): Promise<void> => {
      const mine = known.filter((k) => k.partner === p);
      if (!mine.length) return;
      const target = mine[Math.floor(Math.random() * mine.length)];
      const res = await call(p, 'POST', `${API}/refunds`, { order_id: target.orderId, reason: 'chaos run' });
      if (res.status === 201 || res.status === 200) counts.refunds++;
      else if (res.status === 422) counts.refundsRefused++;
      else problems.push(`refund of ${target.orderId}: ${res.status} ${res.text.slice(0, 200)}`);
    };

    /** A page fetched as a browser, retried while a part is down. */
    const page = async (url: string, init: RequestInit = {}): Promise<Response> => {
      for (let attempt = 0; ; attempt++) {
        try {
          const res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(20_000) });
          observed.push({ at: Date.now(), status: res.status });
          if (res.status === 500) internalErrors.push(`${init.method ?? 'GET'} ${new URL(url).pathname} (a page)`);
          if (res.status < 500 && res.status !== 429) return res;
        } catch {
          observed.push({ at: Date.now(), status: 'error' });
        }
        if (attempt > 100) throw new Error(`gave up on ${url}`);
        counts.retries++;
        await sleep(jitter(500 * 2 ** Math.min(attempt, 3)));
      }
    };

    const checkout = async (p: ChaosPartner): Promise<void> => {
      const domain = nextName();
      if (!domain) return;
      const session = await call<{ session_id: string; checkout_url: string }>(p, 'POST', `${API}/checkout-session`, { domain });
      if (session.status !== 201) {
        counts.quotesSkipped++;
        return;
      }
      const form = await page(session.body.checkout_url, { headers: BROWSER });
      const html = await form.text();
      const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
      if (!csrf) return void problems.push(`checkout ${session.body.session_id}: no form (${form.status})`);
      const cookie = form.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
      const pt = new URL(session.body.checkout_url).searchParams.get('pt')!;
      const body = new URLSearchParams({ pt, _csrf: csrf, name: 'Chaos Buyer', email: 'buyer@example.com', card_number: SANDBOX_CARD, expiry: '12/34', cvc: '123' });
      // The same form submitted again after an unknown outcome, as a buyer's browser retries it.
      await page(new URL('/checkout', session.body.checkout_url).toString(), { method: 'POST', headers: { ...BROWSER, cookie, 'content-type': 'application/x-www-form-urlencoded' }, body });
      const deadline = Date.now() + 3 * 60_000;
      for (;;) {
        const state = await call<{ status: string; order_id?: string }>(p, 'GET', `${API}/checkout-session/${session.body.session_id}`);
        if (state.body.status === 'complete' && state.body.order_id) {
          known.push({ partner: p, orderId: state.body.order_id, domain });
          counts.checkouts++;
          return;
        }
        if (Date.now() > deadline) return void problems.push(`checkout ${session.body.session_id} paid but not complete within 3 minutes (${state.body.status})`);
        await sleep(1_000);
      }
    };

    /** The partner's case for `domain`, from its list (GET /brokerage, newest first). */
    const findCase = async (p: ChaosPartner, domain: string): Promise<PartnerResponse<{ case_id: string }>> => {
      let cursor: string | undefined;
      for (;;) {
        const list = await call<{ data: Array<{ case_id: string; domain: string }>; next_cursor: string | null }>(p, 'GET', `${API}/brokerage?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        const found = list.body.data?.find((c) => c.domain === domain);
        if (found) return { ...list, body: found };
        if (!list.body.next_cursor) return { headers: list.headers, status: 404, text: `no case for ${domain} in the list`, body: { case_id: '' } };
        cursor = list.body.next_cursor;
      }
    };

    const brokerage = async (p: ChaosPartner): Promise<void> => {
      const domain = `chaos-${randomUUID().slice(0, 12)}.com`;
      let created = await call<{ case_id: string }>(p, 'POST', `${API}/brokerage`, { domain, tier: 'managed', buyer_email: 'buyer@example.com', budget_cents: 500_000 });
      if (created.status === 422 && /in_case/.test(created.text)) {
        // An answer lost on the way and retried: the case was opened by the first try; the partner finds it in its list.
        created = await findCase(p, domain);
      }
      if (created.status !== 201 && created.status !== 200) return void problems.push(`brokerage case: ${created.status} ${created.text.slice(0, 200)}`);
      for (const to of ['researching', 'owner_contacted']) {
        const deadline = Date.now() + 5 * 60_000;
        for (;;) {
          const current = await call<{ status: string }>(p, 'GET', `${API}/brokerage/${created.body.case_id}`);
          if (current.body.status === to) break;
          const moved = await admin('brokerage', 'move', created.body.case_id, '--to', to, '--json');
          if (moved.code === 0) break;
          if (Date.now() > deadline) {
            problems.push(`brokerage move of ${created.body.case_id} to ${to} failed for 5 minutes: ${moved.out.slice(0, 200)}`);
            return;
          }
          await sleep(jitter(2_000));
        }
        counts.brokerageMoves++;
      }
    };

    const click = async (p: ChaosPartner): Promise<void> => {
      const res = await page(p.linkUrl!, { headers: BROWSER });
      if (res.status === 302) counts.clicks++;
    };

    // The kills, one at a time at random moments, each waited for until the part is back.
    const schedule = PARTS.flatMap((part) => Array.from({ length: settings.killsPerPart }, () => part)).sort(() => Math.random() - 0.5);
    let killsDone = false;
    const replayChecks: Array<Promise<void>> = [];
    const killing = (async () => {
      for (const part of schedule) {
        await sleep(2_000 + Math.random() * 6_000);
        let replay: { client: PartnerClient; headers: Record<string, string>; pathAndQuery: string } | undefined;
        if (part === 'Redis') {
          // A request signed and admitted before the kill; replayed once Redis is back, it must be refused.
          const p = partners[0];
          const pathAndQuery = `${API}/availability?domain=chaos-replay.com`;
          const headers = p.clients[0].signHeaders('GET', pathAndQuery);
          const first = await fetch(new URL(pathAndQuery, stack.apiUrl), { headers }).catch(() => undefined);
          if (first?.status === 200) replay = { client: p.clients[0], headers, pathAndQuery };
        }
        const killedAt = Date.now();
        let pid: number | undefined;
        if (part === 'second API') pid = api2Child?.pid;
        else pid = stack.pidOf(part);
        if (!pid) {
          problems.push(`${part}: no process to kill`);
          continue;
        }
        process.kill(pid, 'SIGKILL');
        log(`killed ${part} (pid ${pid})`);
        const record: KillRecord = { part, killedAt, unavailableSeconds: 0 };
        kills.push(record);
        const deadline = Date.now() + 180_000;
        for (;;) {
          const back = part === 'second API' ? (secondApi!.running && api2Child?.pid !== pid ? Date.now() : undefined) : stack.backSince(part, killedAt);
          if (back) {
            record.backAt = back;
            break;
          }
          if (Date.now() > deadline) {
            problems.push(`${part} did not come back within 3 minutes of its kill`);
            break;
          }
          await sleep(100);
        }
        if (replay) {
          const r = replay;
          replayChecks.push(
            (async () => {
              // Once admission answers again (not its 503 while Redis is away), the replay must be
              // refused: as signed before the store restarted (503, "sign it again"), or as a used nonce (401).
              for (let i = 0; i < 100; i++) {
                const again = await fetch(new URL(r.pathAndQuery, stack.apiUrl), { headers: r.headers }).catch(() => undefined);
                if (again && (again.status !== 503 || /restarted/.test(await again.clone().text()))) {
                  if (again.status === 200) problems.push('a request signed before a Redis kill was admitted again after it (a replayed nonce)');
                  else counts.replaysRefused++;
                  return;
                }
                await sleep(200);
              }
              problems.push('admission did not answer within 20 s of Redis coming back');
            })(),
          );
        }
      }
      killsDone = true;
    })();

    // The load: every client takes the next task; while kills remain, more orders.
    const tasks: Array<'order' | 'checkout' | 'refund' | 'brokerage'> = [];
    for (let i = 0; i < settings.orders; i++) {
      tasks.push('order');
      if (i % 5 === 4) tasks.push('checkout');
      if (i % 4 === 3) tasks.push('refund');
      if (i % 25 === 12) tasks.push('brokerage');
    }
    let n = 0;
    const loadStarted = Date.now();
    const planned = tasks.length;
    // About 7 s a kill: a random 2–8 s wait, then the part's restart.
    const spacing = (schedule.length * 7_000) / planned;
    log(`load: ${settings.orders} orders and the rest at concurrency ${settings.concurrency}, ${schedule.length} kills`);
    await Promise.all(
      Array.from({ length: settings.concurrency }, async () => {
        for (;;) {
          // The planned tasks are spread over the time the kills should take, so kills meet load;
          // while kills remain after them, an order every couple of seconds keeps orders flowing.
          const index = planned - tasks.length;
          const task = tasks.shift() ?? (killsDone ? undefined : 'order');
          if (!task) return;
          if (index < planned) await sleep(loadStarted + index * spacing - Date.now());
          else await sleep(settings.concurrency * 2_000);
          const p = partners[n++ % partners.length];
          try {
            if (task === 'order') await placeOrder(p);
            else if (task === 'checkout') await checkout(p);
            else if (task === 'refund') await refundOne(p);
            else await brokerage(p);
            await click(p);
          } catch (err) {
            problems.push(`${task}: ${(err as Error).message}`);
          }
          if (!names.length) {
            // No name left to sell: clicks keep the partners busy until the last kill is done.
            while (!killsDone) {
              await click(partners[n++ % partners.length]).catch(() => undefined);
              await sleep(200);
            }
            return;
          }
        }
      }),
    );
    await killing;
    await Promise.all(replayChecks);
    log(`load done in ${((Date.now() - loadStarted) / 1000).toFixed(0)} s: ${counts.orders} orders, ${counts.checkouts} checkouts, ${counts.refunds} refunds (${counts.refundsRefused} refused after the transfer), ${counts.brokerageMoves} brokerage moves, ${counts.clicks} clicks`);

    // Restart costs, per kill.
    const sorted = [...kills].sort((a, b) => a.killedAt - b.killedAt);
    sorted.forEach((k, i) => {
      const until = sorted[i + 1]?.killedAt ?? Infinity;
      const unavailable = observed.filter((o) => o.at >= k.killedAt && o.at < until && (o.status === 503 || o.status === 'error'));
      k.unavailableSeconds = unavailable.length ? (Math.max(...unavailable.map((o) => o.at)) - k.killedAt) / 1000 : 0;
      const next = orderTimes.find((t) => t > k.killedAt);
      if (next !== undefined && next < until) k.ordersBackSeconds = (next - k.killedAt) / 1000;
    });

    // None stuck: every order reaches a final status (sandbox: within two minutes).
    log(`waiting for ${known.length} orders to reach a final status`);
    const finalDeadline = Date.now() + 6 * 60_000;
    for (const k of known) {
      for (;;) {
        const res = await call<{ status: string }>(k.partner, 'GET', `${API}/orders/${k.orderId}`);
        if (res.status === 404) {
          problems.push(`order ${k.orderId} (${k.domain}) was answered to its partner but does not exist (lost)`);
          break;
        }
        if ((FINAL_ORDER_STATUSES as readonly string[]).includes(res.body.status)) break;
        if (Date.now() > finalDeadline) {
          problems.push(`order ${k.orderId} stuck in ${res.body.status}`);
          break;
        }
        await sleep(1_000);
      }
    }

    // Neither lost nor doubled: the partners' orders in the database are exactly those they were told of.
    const stored = await dataSource.getRepository(Order).createQueryBuilder('o').select(['o.publicId', 'o.domain', 'o.partnerId']).where('o.partner_id IN (:...ids)', { ids: partners.map((p) => p.partnerId) }).getMany();
    const toldOf = new Set(known.map((k) => k.orderId));
    for (const o of stored) if (!toldOf.has(o.publicId)) problems.push(`order ${o.publicId} (${o.domain}) exists but no partner was told of it (doubled)`);
    const storedIds = new Set(stored.map((o) => o.publicId));
    for (const k of known) if (!storedIds.has(k.orderId)) problems.push(`order ${k.orderId} lost`);
    // Clicks are counted honestly (one address at most 30 a minute: the run's all come from one), so
    // fewer are stored than redirected; none counted twice, and none dropped for Postgres being down
    // (the main API, whose clicks these are, is never killed; it logs a batch it could not store).
    const clicked = await dataSource.getRepository(ReferralClick).createQueryBuilder('c').select('COALESCE(SUM(c.clicks), 0)', 'n').where('c.partnerId IN (:...ids)', { ids: partners.map((p) => p.partnerId) }).getRawOne<{ n: string }>();
    counts.clicksStored = Number(clicked?.n ?? 0);
    if (counts.clicksStored > counts.clicks) problems.push(`clicks: ${counts.clicks} redirected, ${counts.clicksStored} stored (counted twice)`);
    const clicksLost = stack.lines.filter((l) => l.text.includes('could not store referral clicks')).length;
    if (clicksLost) problems.push(`referral clicks: ${clicksLost} batch(es) could not be stored (lost)`);
    const byName = new Map<string, number>();
    for (const o of stored) byName.set(o.domain, (byName.get(o.domain) ?? 0) + 1);
    for (const [domain, times] of byName) if (times > 1) problems.push(`${domain} was ordered ${times} times`);

    // Every event once in /events, and delivered (deduplicated by id) with nothing else.
    log(`waiting up to ${(settings.deliveryWaitMs / 1000).toFixed(0)} s for every event to reach the receiver`);
    const eventsOf = async (p: ChaosPartner): Promise<string[]> => {
      const ids: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page_ = await call<{ data: Array<{ id: string }>; next_cursor: string }>(p, 'GET', `${API}/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        ids.push(...page_.body.data.map((e) => e.id));
        if (!page_.body.data.length) return ids;
        cursor = page_.body.next_cursor;
      }
    };
    const deliveryDeadline = Date.now() + settings.deliveryWaitMs;
    for (const p of partners) {
      const ids = await eventsOf(p);
      counts.events += ids.length;
      if (new Set(ids).size !== ids.length) problems.push(`${p.name}: an event appears twice in /events`);
      for (;;) {
        const got = received.get(p.partnerId) ?? new Map<string, number>();
        const missing = ids.filter((id) => !got.has(id));
        if (!missing.length) {
          for (const id of got.keys()) if (!ids.includes(id)) problems.push(`${p.name}: delivered ${id}, which is not in /events`);
          break;
        }
        if (Date.now() > deliveryDeadline) {
          problems.push(`${p.name}: ${missing.length} of ${ids.length} events not delivered within the wait`);
          break;
        }
        await sleep(1_000);
      }
    }

    if (internalErrors.length) problems.push(`${internalErrors.length} answers were 500 (a part down must answer 503), e.g. ${[...new Set(internalErrors)].slice(0, 3).join('; ')}`);

    // The ledger reconciles.
    const reconciled = await admin('reconcile', '--json');
    if (reconciled.code !== 0) problems.push(`reconcile: ${reconciled.out.slice(0, 500)}`);

    await db.destroy();
    db = undefined;
    await secondApi.stop();
    secondApi = undefined;

    // Ctrl-C stops everything, in order, after all that.
    const partsBefore = [stack.pidOf('Postgres'), stack.pidOf('Redis'), stack.pidOf('Temporal server'), stack.pidOf('search process'), stack.pidOf('worker')].filter((p): p is number => !!p);
    const code = await stack.interrupt();
    const stopped = ['API', 'search process', 'worker', 'Temporal dev server', 'Redis', 'Postgres'].every((name) => stack.lines.some((l) => l.text === `[start] stopped ${name}`));
    const leftBehind = partsBefore.filter(alive);
    stoppedCleanly = code === 0 && stopped && leftBehind.length === 0;
    if (!stoppedCleanly) problems.push(`Ctrl-C after the run: exit ${code}, every part stopped in order: ${stopped}, left running: ${leftBehind.join(', ') || 'none'}`);
  } catch (err) {
    problems.push(`the run failed: ${(err as Error).stack ?? err}`);
  } finally {
    await db?.destroy().catch(() => undefined);
    await secondApi?.stop().catch(() => undefined);
    receiver?.close();
    stack.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { ok: problems.length === 0, problems, seconds: (Date.now() - started) / 1000, kills, counts, stoppedCleanly };
}

/** The restart costs per kind of part: kills, mean and worst seconds of 503, and until orders flowed. */
export function restartTable(kills: KillRecord[]): string {
  const rows = PARTS.map((part) => {
    const of = kills.filter((k) => k.part === part);
    const stat = (values: number[]) => (values.length ? `${(values.reduce((a, b) => a + b, 0) / values.length).toFixed(1)} / ${Math.max(...values).toFixed(1)}` : '–');
    return `| ${part} | ${of.length} | ${stat(of.map((k) => k.unavailableSeconds))} | ${stat(of.filter((k) => k.ordersBackSeconds !== undefined).map((k) => k.ordersBackSeconds!))} |`;
  });
  return ['| part killed | kills | 503 or refused, s (mean / worst) | until an order is recorded, s (mean / worst) |', '|---|---|---|---|', ...rows].join('\n');
}
