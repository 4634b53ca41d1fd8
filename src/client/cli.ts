/**
 * `npm run --silent call -- METHOD PATH [JSON_BODY]`: one signed request, printed as JSON.
 * Reads PARTNER_API_URL (default http://127.0.0.1:3000), PARTNER_KEY_ID and PARTNER_SECRET.
 * Extra headers: `-H 'Idempotency-Key: …'`. Exit code 0 on 2xx, 1 otherwise.
 */
import { Command } from 'commander';
import { PartnerClient } from './partner-client';

// A command-line tool of its own: it reads its own environment, not the service's config.
const env = process.env;

const program = new Command()
  .name('call')
  .description('Send one signed request to the partner API')
  .argument('<method>', 'HTTP method, e.g. GET')
  .argument('<path>', "path and query, e.g. '/api/partner/v1/domains/search?q=coffee'")
  .argument('[body]', 'JSON body')
  .option('-H, --header <header...>', "extra header, 'Name: value'")
  .option('-i, --include', 'print status and response headers to stderr')
  .action(async (method: string, path: string, body: string | undefined, opts: { header?: string[]; include?: boolean }) => {
    const keyId = env.PARTNER_KEY_ID;
    const secret = env.PARTNER_SECRET;
    if (!keyId || !secret) {
      process.stderr.write('set PARTNER_KEY_ID and PARTNER_SECRET (npm start prints a sandbox credential)\n');
      process.exit(2);
    }
    const client = new PartnerClient(env.PARTNER_API_URL ?? 'http://127.0.0.1:3000', { keyId, secret });
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

program.parseAsync().catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
