/**
 * The parts every entry point (dev stack, API, worker, admin CLI) resolves the same way:
 * the database (DATABASE_URL, else the embedded Postgres in the data directory) and the master
 * key (MASTER_KEY, else the dev stack's key file in the data directory). The production entry
 * points (api, worker, migrate) take the keys from the environment only: productionKeys.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { decodeMasterKey, type Config } from '../config';
import type { MasterKeyring } from '../auth/secret-box';
import { startEmbeddedPostgres, type RunningPostgres } from '../db/embedded-postgres';
import { openDatabase } from '../db/data-source';
import { QuoteTokenSigner } from '../orders/quote-token';

export function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

export async function resolveDatabase(config: Config, log: (m: string) => void = say): Promise<RunningPostgres> {
  if (config.database.url) return { url: config.database.url, stop: async () => undefined };
  return startEmbeddedPostgres(path.join(config.dataDir, 'postgres'), config.database.embeddedPort, log);
}

export function resolveMasterKey(config: Config, log: (m: string) => void = say): MasterKeyring {
  if (config.masterKey) return config.masterKey;
  const file = path.join(config.dataDir, 'master.key');
  if (existsSync(file)) return decodeMasterKey(readFileSync(file, 'utf8'));
  // A key invented here would seal secrets that the service, which has its own, cannot open.
  if (config.production) throw new Error('MASTER_KEY is required in production (NODE_ENV=production): no key is invented outside development');
  mkdirSync(config.dataDir, { recursive: true });
  writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  log(`created a master key for credential secrets in ${file} (set MASTER_KEY in production)`);
  return decodeMasterKey(readFileSync(file, 'utf8'));
}

export async function openProjectDatabase(config: Config, log: (m: string) => void = say): Promise<{ dataSource: DataSource; postgres: RunningPostgres }> {
  const postgres = await resolveDatabase(config, log);
  const dataSource = await openDatabase(postgres.url);
  return { dataSource, postgres };
}

export function resolveQuoteSigner(config: Config, log: (m: string) => void = say): QuoteTokenSigner {
  return QuoteTokenSigner.fromPem(resolveQuoteSigningPem(config, log));
}

/** The quote-signing key's PEM: QUOTE_SIGNING_KEY, else the dev key in DATA_DIR (made once). */
export function resolveQuoteSigningPem(config: Config, log: (m: string) => void = say): string {
  if (config.quoteSigningKeyPem) return config.quoteSigningKeyPem;
  const file = path.join(config.dataDir, 'quote-signing-key.pem');
  if (!existsSync(file)) {
    if (config.production) throw new Error('QUOTE_SIGNING_KEY is required in production (NODE_ENV=production): no key is invented outside development');
    mkdirSync(config.dataDir, { recursive: true });
    writeFileSync(file, QuoteTokenSigner.generatePem(), { mode: 0o600 });
    log(`created an Ed25519 quote-token signing key in ${file} (set QUOTE_SIGNING_KEY in production)`);
  }
  return readFileSync(file, 'utf8');
}

/** An entry point started without something it must not make up for itself. */
export class StartRefused extends Error {
  readonly name = 'StartRefused';
}

/**
 * The keys of the production entry points (npm run start:api, start:worker, migrate), from the
 * environment only. A key file generated in DATA_DIR would differ per container and vanish with
 * it, leaving sealed credential secrets unreadable and quote tokens unverifiable by the other
 * processes. `npm start` runs the same services (the API in its own process, the worker as its child) and keeps its keys in DATA_DIR.
 */
export function productionKeys(config: Config, entryPoint: string): { masterKey: MasterKeyring; quoteSigner: QuoteTokenSigner } {
  const missing = [config.masterKey ? undefined : 'MASTER_KEY', config.quoteSigningKeyPem ? undefined : 'QUOTE_SIGNING_KEY'].filter((v): v is string => !!v);
  if (missing.length) {
    throw new StartRefused(
      `${entryPoint}: refusing to start without ${missing.join(' and ')} (production keys are never generated). ` +
        'Set MASTER_KEY=$(openssl rand -hex 32) and QUOTE_SIGNING_KEY=$(openssl genpkey -algorithm ed25519 | base64 -w0), the same for every process; ' +
        'for local development run npm start, which keeps its own keys in DATA_DIR.',
    );
  }
  return { masterKey: config.masterKey!, quoteSigner: QuoteTokenSigner.fromPem(config.quoteSigningKeyPem!) };
}

/** How an entry point ends on a failed start: a refusal as its message alone, anything else with its stack. */
export function exitStartFailed(entryPoint: string, err: unknown): never {
  process.stderr.write(err instanceof StartRefused ? `${err.message}\n` : `${entryPoint}: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
}
