#!/usr/bin/env node
/**
 * The partner CLI, the SDK's `partner-api` bin (`npm run --silent call -- …` in this repository):
 * `partner-api call METHOD PATH [JSON_BODY]` (or without `call`): one signed request, printed as JSON.
 * Reads PARTNER_API_URL (default http://127.0.0.1:3000), PARTNER_KEY_ID and PARTNER_SECRET.
 * Extra headers: `-H 'Name: value'`. Exit code 0 on 2xx, 1 otherwise.
 *
 * `partner-api events forward URL [--secret S] [--from-start | --cursor C]`: posts
 * the partner's events to a local webhook receiver, signed like real deliveries (forward-events.ts).
 */
import { Command } from 'commander';
import { forwardEvents } from './forward-events';
import { PartnerClient } from './partner-client';

// A command-line tool of its own: it reads its own environment, not the service's config.
const env = process.env;

function clientFromEnv(): PartnerClient {
  const keyId = env.PARTNER_KEY_ID;
  const secret = env.PARTNER_SECRET;
  if (!keyId || !secret) {
    process.stderr.write('set PARTNER_KEY_ID and PARTNER_SECRET (npm start prints a sandbox credential)\n');
    process.exit(2);
  }
  return new PartnerClient(env.PARTNER_API_URL ?? 'http://127.0.0.1:3000', { keyId, secret });
}

const program = new Command()
  .name('partner-api')
  .description('Send one signed request to the partner API')
  .argument('<method>', 'HTTP method, e.g. GET')
  .argument('<path>', "path and query, e.g. '/api/partner/v1/domains/search?q=coffee'")
  .argument('[body]', 'JSON body')
  .option('-H, --header <header...>', "extra header, 'Name: value'")
  .option('-i, --include', 'print status and response headers to stderr')
  .action(async (method: string, path: string, body: string | undefined, opts: { header?: string[]; include?: boolean }) => {
    const client = clientFromEnv();
    const headers: Record<string, string> = {};
    for (const h of opts.header ?? []) {
      const i = h.indexOf(':');
      if (i > 0) headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
    }
    const response = await client.request(method, path, { body, headers });
    if (opts.include) {
      process.stderr.write(`HTTP ${response.status}\n`);
      response.headers.forEach((value, name) => process.stderr.write(`${name}: ${value}\n`));
    }
    process.stdout.write(typeof response.body === 'string' ? `${response.body}\n` : `${JSON.stringify(response.body, null, 2)}\n`);
    process.exit(response.status >= 200 && response.status < 300 ? 0 : 1);
  });

program
  .command('events')
  .description("The partner's event history")
  .command('forward')
  .description('Post each new event to a local URL, signed like a webhook delivery, in order, retrying failed posts (Ctrl-C stops)')
  .argument('<url>', 'the local receiver, e.g. http://localhost:4242/hooks')
  .option('--secret <secret>', 'webhook secret to sign with (default: PARTNER_WEBHOOK_SECRET)')
  .option('--from-start', 'replay the whole history first (default: only events recorded from now on)')
  .option('--cursor <cursor>', 'resume after this cursor, as printed when a previous run stopped')
  .option('--interval <seconds>', 'how often to ask for new events once caught up', '2')
  .action(async (url: string, opts: { secret?: string; fromStart?: boolean; cursor?: string; interval: string }) => {
    const secret = opts.secret ?? env.PARTNER_WEBHOOK_SECRET;
    if (!secret) {
      process.stderr.write('give the webhook secret with --secret or PARTNER_WEBHOOK_SECRET\n');
      process.exit(2);
    }
    if (opts.fromStart && opts.cursor) {
      process.stderr.write('--from-start and --cursor exclude each other\n');
      process.exit(2);
    }
    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    process.once('SIGTERM', () => stop.abort());
    const cursor = await forwardEvents({
      client: clientFromEnv(),
      url,
      secret,
      from: opts.cursor ? { cursor: opts.cursor } : opts.fromStart ? 'start' : 'now',
      pollIntervalMs: Number(opts.interval) * 1000,
      signal: stop.signal,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    process.stderr.write(cursor ? `stopped; resume with --cursor ${cursor}\n` : 'stopped\n');
    process.exit(0);
  });

// `partner-api call GET /path` and `partner-api GET /path` are the same request.
const argv = process.argv[2] === 'call' ? [...process.argv.slice(0, 2), ...process.argv.slice(3)] : process.argv;
program.parseAsync(argv).catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
