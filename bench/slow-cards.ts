/**
 * `npm run bench:slow-cards` (with `npm start` running in another terminal): signed availability
 * latency while hosted-checkout payments wait on a slow card processor, next to the same requests
 * with no payment under way (the bare baseline, measured in the same run).
 *
 * A payment authorises outside any database transaction (src/checkout/sessions.ts), so buyers
 * waiting on their card hold no pooled connection: partners' signed requests keep their latency.
 * It opens BENCH_PAYMENTS (default 20) checkout sessions on listed sandbox names, fills their
 * forms as a browser does, and pays them all at once with the sandbox's slow card
 * (4000 0000 0000 0077, about 3 s), BENCH_WAVES (3) times; meanwhile BENCH_READERS (4) clients
 * ask /availability in a loop. The names paid for are sold (sandbox inventory).
 */
import { loadConfig } from '../src/config';
import { CredentialService } from '../src/auth/credentials';
import { SecretBox } from '../src/auth/secret-box';
import { SCOPES } from '../src/auth/scopes';
import { PartnerClient } from '../src/client/partner-client';
import { findOrCreatePartner } from '../src/partners/partners';
import { openProjectDatabase, resolveMasterKey } from '../src/main/runtime';

const settings = {
  payments: Number(process.env.BENCH_PAYMENTS ?? 20),
  waves: Number(process.env.BENCH_WAVES ?? 3),
  readers: Number(process.env.BENCH_READERS ?? 4),
};
const BROWSER = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36', accept: 'text/html' };
const SLOW_CARD = '4000000000000077';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Signed availability requests from `readers` clients until `until` resolves; their latencies in ms. */
async function readWhile(api: PartnerClient, names: string[], readers: number, until: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  let done = false;
  void until.finally(() => (done = true));
  await Promise.all(
    Array.from({ length: readers }, async (_, r) => {
      for (let i = r; !done; i += readers) {
        const started = process.hrtime.bigint();
        const res = await api.get(`/api/partner/v1/availability?domain=${names[i % names.length]}`);
        latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
        if (res.status !== 200) throw new Error(`availability: ${res.status} ${res.text}`);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}

/** A session's checkout form, opened as a browser opens it; `pay()` submits it with the slow card. */
async function openForm(api: PartnerClient, name: string): Promise<() => Promise<number>> {
  const session = await api.post<{ checkout_url: string }>('/api/partner/v1/checkout-session', { domain: name });
  if (session.status !== 201) throw new Error(`checkout-session ${name}: ${session.text}`);
  const page = await fetch(session.body.checkout_url, { headers: BROWSER });
  const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1];
  if (!csrf) throw new Error(`no form for ${name}`);
  const pt = new URL(session.body.checkout_url).searchParams.get('pt')!;
  return async () => {
    const res = await fetch(new URL('/checkout', session.body.checkout_url), {
      method: 'POST',
      redirect: 'manual',
      headers: { ...BROWSER, cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ pt, _csrf: csrf, name: 'Bench Buyer', email: 'bench@example.com', card_number: SLOW_CARD, expiry: '12/34', cvc: '123' }),
    });
    await res.arrayBuffer();
    return res.status;
  };
}

const line = (label: string, l: number[]) => `${label} ${l.length} requests: p50 ${percentile(l, 50).toFixed(1)} ms, p99 ${percentile(l, 99).toFixed(1)} ms, max ${l[l.length - 1].toFixed(1)} ms`;

async function main(): Promise<void> {
  const config = loadConfig();
  const baseUrl = config.http.publicBaseUrl ?? `http://${config.http.host}:${config.http.port}`;
  const { dataSource, postgres } = await openProjectDatabase(config, () => undefined);
  const credentials = new CredentialService(dataSource, new SecretBox(resolveMasterKey(config)));
  const { partner } = await findOrCreatePartner(dataSource, 'benchmark');
  const issued = await credentials.issue({ partnerId: partner.id, environment: 'sandbox', scopes: [...SCOPES], rateLimitPerSecond: 100_000 });
  const api = new PartnerClient(baseUrl, { keyId: issued.keyId, secret: issued.secret });
  const wanted = settings.payments * settings.waves;
  const listed = (await dataSource.query(`SELECT name FROM domains WHERE environment = 'sandbox' AND status = 'listed' ORDER BY random() LIMIT $1`, [wanted + 50])) as Array<{ name: string }>;
  if (listed.length < wanted + 50) throw new Error(`only ${listed.length} listed sandbox names left`);
  const toBuy = listed.slice(0, wanted).map((r) => r.name);
  const toRead = listed.slice(wanted).map((r) => r.name);

  // The baseline: as long as one wave of slow payments takes (3 s and a little), with none under way.
  const baseline = await readWhile(api, toRead, settings.readers, new Promise((r) => setTimeout(r, 3500 * settings.waves)));
  const loaded: number[] = [];
  const statuses: number[] = [];
  for (let wave = 0; wave < settings.waves; wave++) {
    const forms = await Promise.all(toBuy.slice(wave * settings.payments, (wave + 1) * settings.payments).map((name) => openForm(api, name)));
    process.stderr.write(`wave ${wave + 1}: ${forms.length} slow-card payments at once…\n`);
    const paying = Promise.all(forms.map((pay) => pay()));
    loaded.push(...(await readWhile(api, toRead, settings.readers, paying)));
    statuses.push(...(await paying));
  }
  loaded.sort((a, b) => a - b);
  await credentials.revoke(issued.keyId);
  const paid = statuses.filter((s) => s === 303 || s === 200).length;
  process.stdout.write(
    [
      line('availability, no payment under way:      ', baseline),
      line(`availability, ${settings.payments} slow-card payments at once:`, loaded),
      `p99 ratio (under payments / baseline): ${(percentile(loaded, 99) / percentile(baseline, 99)).toFixed(2)}`,
      `payments answered: ${paid} of ${statuses.length} (statuses ${[...new Set(statuses)].join(', ')})`,
      '',
    ].join('\n'),
  );
  await dataSource.destroy();
  await postgres.stop();
}

main().catch((err) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
