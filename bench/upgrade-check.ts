/**
 * `npm run upgrade-check -- <git ref>`: an upgrade from an earlier release to this checkout,
 * run for real (docs/operators/runbook.md, Upgrade from the previous release).
 *
 * 1. The given release is checked out beside this one (git worktree), installed and built.
 * 2. Its `npm start` runs on a fresh data directory; work is put in flight through the signed
 *    API with its printed sandbox credential: orders waiting for a transfer (sandbox input
 *    `stall_transfer`) and one completing, an open checkout session, a brokerage case, and a
 *    webhook endpoint that fails every delivery.
 * 3. It is stopped (Ctrl-C), and this release's `npm start` runs on the same data (its
 *    migrations, its worker replaying the old release's runs).
 * 4. Every piece is carried to its end: the endpoint answers again, the waiting orders reach
 *    their deadline, the session expires, the case is moved and closed by an operator.
 * 5. It checks: every order final, the session expired, the case closed, every event of /events
 *    delivered once (deduplicated by id: none twice, none missing), and `admin reconcile` clean.
 *
 * Prints a report and exits 1 on any problem. Takes a few minutes (two installs and builds, two
 * stacks started).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PartnerClient, type PartnerResponse } from '../src/client/partner-client';
import { FINAL_ORDER_STATUSES } from '../workflows/messages';
import { Stack } from './chaos-run';
import { webhookReceiver } from './webhook-receiver';
import { waitFor } from '../test/helpers/wait';

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
const API = '/api/partner/v1';
const WEBHOOK_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (m: string) => process.stderr.write(`[upgrade-check] ${m}\n`);

function sh(cmd: string, args: string[], cwd: string): void {
  log(`${path.basename(cmd)} ${args.join(' ')} (in ${cwd})`);
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` } });
}

async function main(): Promise<void> {
  const ref = process.argv[2];
  if (!ref) throw new Error('usage: npm run upgrade-check -- <git ref of the earlier release>');
  const commit = execFileSync('git', ['rev-parse', '--short=12', `${ref}^{commit}`], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
  const work = mkdtempSync(path.join(os.tmpdir(), 'upgrade-check-'));
  const oldTree = path.join(work, `release-${commit}`);
  const dataDir = path.join(work, 'data');
  const problems: string[] = [];
  const started = Date.now();
  log(`from ${ref} (${commit}) to this checkout; work in ${work}`);
  sh('git', ['worktree', 'add', '--detach', oldTree, commit], PROJECT_ROOT);
  let before: Stack | undefined;
  let after: Stack | undefined;
  let receiver: http.Server | undefined;
  try {
    sh('npm', ['ci', '--no-audit', '--no-fund'], oldTree);
    sh('npm', ['run', '--silent', 'build'], oldTree);

    // The partner's webhook receiver: fails every delivery until `answering`, then counts each event id.
    let answering = false;
    const received = new Map<string, number>();
    let attemptsWhileFailing = 0;
    const hooks = await webhookReceiver(
      () => WEBHOOK_SECRET,
      (delivery) => {
        if (!answering) {
          attemptsWhileFailing++;
          return 500;
        }
        if ('error' in delivery) {
          problems.push(`a delivery did not verify: ${delivery.error}`);
          return 400;
        }
        received.set(delivery.id, (received.get(delivery.id) ?? 0) + 1);
        return 200;
      },
    );
    receiver = hooks.server;
    const receiverUrl = hooks.url;

    // The earlier release, with work in flight.
    log(`starting ${commit}'s npm start`);
    before = new Stack(dataDir, { WEBHOOK_ALLOW_LOOPBACK: 'true' }, { entry: path.join(oldTree, 'dist', 'src', 'main', 'dev-stack.js') });
    await before.start(log);
    const credential = before.sandboxCredential();
    const partner = (stack: Stack) => new PartnerClient(stack.apiUrl, credential);
    const call = async <T>(stack: Stack, method: string, pathAndQuery: string, body?: unknown, idempotencyKey?: string): Promise<PartnerResponse<T>> => {
      for (let attempt = 0; ; attempt++) {
        const res = await partner(stack)
          .request<T>(method, pathAndQuery, { body, headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : undefined, timeoutMs: 30_000 })
          .catch(() => undefined);
        if (res && res.status < 500 && res.status !== 429) return res;
        if (attempt > 30) throw new Error(`${method} ${pathAndQuery}: ${res ? `${res.status} ${res.text.slice(0, 200)}` : 'no answer'}`);
        await sleep(1_000);
      }
    };
    const hook = await call(before, 'PUT', '/api/partner/webhooks', { url: `${receiverUrl}/hooks`, secret: WEBHOOK_SECRET });
    if (hook.status !== 200) throw new Error(`webhook endpoint: ${hook.status} ${hook.text}`);

    // Sandbox names to buy: a few searches (each answers up to 5).
    const names: string[] = [];
    for (const q of ['shop', 'cloud', 'green', 'data', 'travel', 'coffee']) {
      const found = await call<{ data: Array<{ name: string; available: boolean }> }>(before, 'GET', `${API}/domains/search?q=${q}`);
      for (const r of found.body.data ?? []) if (r.available && !names.includes(r.name)) names.push(r.name);
    }
    const nextName = () => {
      const name = names.shift();
      if (!name) throw new Error('the sandbox search ran out of names');
      return name;
    };
    const orders: Array<{ id: string; ref: string }> = [];
    for (const ref of ['stall_transfer', 'stall_transfer', `upgrade_${randomUUID()}`]) {
      let quote: PartnerResponse<{ quote_id: string; price_cents: number }>;
      do quote = await call<{ quote_id: string; price_cents: number }>(before, 'POST', `${API}/quotes`, { domain: nextName() });
      while (quote.status !== 201);
      const order = await call<{ public_id: string }>(before, 'POST', `${API}/orders`, { quote_id: quote.body.quote_id, external_payment_ref: ref, sale_price_cents: quote.body.price_cents }, randomUUID());
      if (order.status !== 201) throw new Error(`order: ${order.status} ${order.text}`);
      orders.push({ id: order.body.public_id, ref });
    }
    let session: PartnerResponse<{ session_id: string }>;
    do session = await call<{ session_id: string }>(before, 'POST', `${API}/checkout-session`, { domain: nextName() });
    while (session.status === 422 || session.status === 409);
    if (session.status !== 201) throw new Error(`checkout session: ${session.status} ${session.text}`);
    const brokerageCase = await call<{ case_id: string }>(before, 'POST', `${API}/brokerage`, { domain: `upgrade-${randomUUID().slice(0, 12)}.com`, tier: 'managed', buyer_email: 'buyer@example.com', budget_cents: 500_000 });
    if (brokerageCase.status !== 201) throw new Error(`brokerage case: ${brokerageCase.status} ${brokerageCase.text}`);
    await waitFor(async () => attemptsWhileFailing, (n) => n >= 1, 60_000, 'a first delivery attempt (failing)');
    log(`in flight: orders ${orders.map((o) => `${o.id} (${o.ref})`).join(', ')}; session ${session.body.session_id}; case ${brokerageCase.body.case_id}; the endpoint failing`);
    const code = await before.interrupt();
    if (code !== 0) problems.push(`${commit}'s npm start did not stop cleanly on Ctrl-C (${code})`);

    // This release on the same data.
    log('starting this release on the same data');
    after = new Stack(dataDir, { WEBHOOK_ALLOW_LOOPBACK: 'true' });
    await after.start(log);
    answering = true;
    const admin = after.admin.bind(after);

    const forward = async (object: string, id: string) => {
      const res = await call<{ fired: string }>(after!, 'POST', `${API}/sandbox/fast-forward`, { object, id });
      if (res.status !== 200) problems.push(`fast-forward of ${object} ${id} after the upgrade: ${res.status} ${res.text.slice(0, 200)}`);
    };
    for (const o of orders.filter((o) => o.ref === 'stall_transfer')) await forward('order', o.id);
    await forward('checkout_session', session.body.session_id);
    for (const to of ['researching', 'closed']) {
      const moved = await admin('brokerage', 'move', brokerageCase.body.case_id, '--to', to, '--reason', 'upgrade check', '--json');
      if (moved.code !== 0) problems.push(`brokerage move to ${to} after the upgrade: ${moved.out.slice(0, 300)}`);
    }
    for (const o of orders) {
      const final = await waitFor(
        async () => (await call<{ status: string }>(after!, 'GET', `${API}/orders/${o.id}`)).body.status,
        (status) => (FINAL_ORDER_STATUSES as readonly string[]).includes(status),
        180_000,
        `order ${o.id} final`,
      ).catch((err: Error) => (problems.push(err.message), 'not final'));
      log(`order ${o.id} (${o.ref}): ${final}`);
    }
    const sessionState = (await call<{ status: string }>(after, 'GET', `${API}/checkout-session/${session.body.session_id}`)).body.status;
    if (sessionState !== 'expired') problems.push(`the checkout session is ${sessionState}, not expired`);
    const caseState = (await call<{ status: string }>(after, 'GET', `${API}/brokerage/${brokerageCase.body.case_id}`)).body.status;
    if (caseState !== 'closed') problems.push(`the brokerage case is ${caseState}, not closed`);

    // Every event of the partner's history delivered once (read again until all have come: the
    // last steps' events are written as they end).
    const eventIds: string[] = [];
    const readEvents = async () => {
      eventIds.length = 0;
      for (let cursor: string | null | undefined; ; ) {
        const page = await call<{ data: Array<{ id: string }>; next_cursor: string | null }>(after!, 'GET', `${API}/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        eventIds.push(...page.body.data.map((e) => e.id));
        // next_cursor is never null: the history ends at an empty page.
        if (!page.body.data.length || !page.body.next_cursor) break;
        cursor = page.body.next_cursor;
      }
      return eventIds.filter((id) => !received.has(id)).length + [...received.keys()].filter((id) => !eventIds.includes(id)).length;
    };
    await waitFor(readEvents, (n) => n === 0, 5 * 60_000, 'every event of /events delivered, and nothing else').catch((err: Error) => problems.push(err.message));
    const twice = [...received].filter(([, n]) => n > 1).map(([id]) => id);
    if (twice.length) problems.push(`delivered more than once: ${twice.join(', ')}`);
    const stray = [...received.keys()].filter((id) => !eventIds.includes(id));
    if (stray.length) problems.push(`delivered but not in /events: ${stray.join(', ')}`);
    const reconciled = await admin('reconcile', '--json');
    if (reconciled.code !== 0) problems.push(`admin reconcile: ${reconciled.out.slice(0, 500)}`);
    const code2 = await after.interrupt();
    if (code2 !== 0) problems.push(`this release's npm start did not stop cleanly on Ctrl-C (${code2})`);
    after = undefined;

    const minutes = ((Date.now() - started) / 60_000).toFixed(1);
    process.stdout.write(
      [
        `upgrade-check ${new Date().toISOString().slice(0, 10)}: ${commit} → ${execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim()} (${minutes} min)`,
        `  in flight across the upgrade: ${orders.length} orders (${orders.filter((o) => o.ref === 'stall_transfer').length} waiting for a transfer), a checkout session, a brokerage case, an endpoint failing ${attemptsWhileFailing} attempt(s)`,
        `  events: ${eventIds.length} in /events, ${received.size} delivered, ${twice.length} twice; reconcile ${reconciled.code === 0 ? 'clean' : 'NOT clean'}`,
        problems.length ? `  PROBLEMS:\n${problems.map((p) => `   - ${p}`).join('\n')}` : '  every piece finished: passed',
        '',
      ].join('\n'),
    );
    if (problems.length) process.exitCode = 1;
  } finally {
    // Ctrl-C first, so that the stack stops its parts (Postgres, Redis, Temporal) with it; then killed.
    for (const stack of [before, after]) {
      if (stack && stack.exitCode === undefined) await stack.interrupt(60_000);
      stack?.kill();
    }
    receiver?.close();
    try {
      execFileSync('git', ['worktree', 'remove', '--force', oldTree], { cwd: PROJECT_ROOT, stdio: 'ignore' });
    } catch {
      // Removed with the work directory below; `git worktree prune` forgets it.
    }
    if (existsSync(work)) rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`upgrade-check: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
