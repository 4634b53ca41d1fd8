/**
 * The listed inventory: loading it from CSV and reading one name. Sandbox and live are two
 * separate inventories in one table, kept apart by `environment` in every query.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { domainToASCII } from 'node:url';
import { parse } from 'csv-parse/sync';
import { z } from 'zod';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { centsFromDb } from '../db/columns';
import { Domain, type DomainStatus } from '../db/entities/domain';
import { runPrepared, type PreparedStatement } from '../db/prepared';

export const DOMAIN_NAME = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

export function normaliseDomainName(name: string): string {
  const trimmed = name.trim();
  // An internationalised name (`münchen.de`) stands for its ASCII form (`xn--mnchen-3ya.de`),
  // the one registries hold. Only letters, marks, digits, hyphens and dots (also the ideographic
  // ones) are converted: domainToASCII reads a URL's host, and would cut `academy.com/é` down to
  // `academy.com`. Anything else stays as written and fails isDomainName.
  const ascii = /[^\x00-\x7f]/.test(trimmed) && /^[\p{L}\p{M}\p{N}.\-。．｡]+$/u.test(trimmed) ? domainToASCII(trimmed) || trimmed : trimmed;
  return ascii.toLowerCase().replace(/\.$/, '');
}

/** A name's label, what search matches against: the name up to its first dot (`coffeebar` of `coffeebar.com`). */
export function labelOf(name: string): string {
  return name.slice(0, name.indexOf('.'));
}

export function isDomainName(name: string): boolean {
  return DOMAIN_NAME.test(name);
}

const cents = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const csvBoolean = z.enum(['true', 'false']).transform((v) => v === 'true');

export const InventoryRow = z
  .object({
    name: z.string().transform(normaliseDomainName).refine(isDomainName, 'not a domain name'),
    tld: z.string().optional(),
    category: z.string().trim().min(1),
    buy_now_price_cents: cents,
    floor_price_cents: cents,
    currency: z.string().regex(/^[A-Z]{3}$/, 'ISO 4217 code'),
    status: z.enum(['listed', 'unlisted']),
    active_site: csvBoolean.default(false),
    registered_year: z.coerce.number().int().min(1985).max(2100).optional(),
  })
  .refine((r) => r.floor_price_cents <= r.buy_now_price_cents, { message: 'floor price above buy-now price', path: ['floor_price_cents'] });
export type InventoryRow = z.output<typeof InventoryRow>;

export class InventoryImportError extends Error {
  constructor(readonly problems: string[]) {
    super(`inventory file rejected:\n${problems.slice(0, 20).join('\n')}${problems.length > 20 ? `\n… and ${problems.length - 20} more` : ''}`);
  }
}

/** Parses and checks a whole file first: one bad row rejects the file, nothing half-imported. */
export function parseInventoryCsv(text: string): InventoryRow[] {
  const records = parse(text, { columns: true, skip_empty_lines: true, trim: true }) as Record<string, string>[];
  const rows: InventoryRow[] = [];
  const problems: string[] = [];
  records.forEach((record, index) => {
    const parsed = InventoryRow.safeParse(record);
    if (parsed.success) rows.push(parsed.data);
    else problems.push(`line ${index + 2}: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join(', ')}`);
  });
  if (problems.length) throw new InventoryImportError(problems);
  return rows;
}

export interface ImportSummary {
  environment: Environment;
  rows: number;
  inserted: number;
  updated: number;
}

/**
 * Inserts new names and refreshes the listing data of known ones in one transaction. A name a
 * quote has reserved or an order has sold keeps that status: an import never re-lists it.
 */
export async function importInventory(dataSource: DataSource, environment: Environment, rows: InventoryRow[]): Promise<ImportSummary> {
  let inserted = 0;
  await dataSource.transaction(async (tx) => {
    for (let i = 0; i < rows.length; i += 500) {
      const batch = rows.slice(i, i + 500);
      const values: unknown[] = [];
      const tuples = batch.map((r, j) => {
        const label = labelOf(r.name);
        const tld = r.name.slice(r.name.indexOf('.') + 1);
        values.push(environment, r.name, label, tld, r.category, r.buy_now_price_cents, r.floor_price_cents, r.currency, r.status, r.active_site, r.registered_year ?? null);
        const b = j * 11;
        return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}, $${b + 8}, $${b + 9}, $${b + 10}, $${b + 11})`;
      });
      // Raw SQL: a multi-row upsert that keeps reserved/sold statuses and tells inserts from updates by xmax.
      const result = (await tx.query(
        `INSERT INTO domains (environment, name, label, tld, category, buy_now_price_cents, floor_price_cents, currency, status, active_site, registered_year)
         VALUES ${tuples.join(', ')}
         ON CONFLICT (environment, name) DO UPDATE SET
           category = EXCLUDED.category,
           buy_now_price_cents = EXCLUDED.buy_now_price_cents,
           floor_price_cents = EXCLUDED.floor_price_cents,
           currency = EXCLUDED.currency,
           status = CASE WHEN domains.status IN ('reserved', 'sold') THEN domains.status ELSE EXCLUDED.status END,
           active_site = EXCLUDED.active_site,
           registered_year = EXCLUDED.registered_year,
           updated_at = now()
         RETURNING (xmax = 0) AS inserted`,
        values,
      )) as Array<{ inserted: boolean }>;
      inserted += result.filter((r) => r.inserted).length;
    }
  });
  // A large import changes the table's statistics: refresh them, so the planner keeps using the
  // search indexes (autovacuum would get there later).
  if (rows.length >= 1000) await dataSource.query('ANALYZE domains');
  return { environment, rows: rows.length, inserted, updated: rows.length - inserted };
}

/** The sandbox inventory the project ships (data/sandbox-domains.csv), imported as `npm start` imports it. */
export function importSandboxInventory(dataSource: DataSource, projectRoot: string): Promise<ImportSummary> {
  return importInventory(dataSource, 'sandbox', parseInventoryCsv(readFileSync(path.join(projectRoot, 'data', 'sandbox-domains.csv'), 'utf8')));
}

/** A name as the inventory knows it, or undefined when it is not in this environment's inventory at all. */
export async function findDomain(dataSource: DataSource, environment: Environment, name: string): Promise<Domain | undefined> {
  const row = await dataSource.getRepository(Domain).findOne({ where: { environment, name: normaliseDomainName(name) } });
  return row ?? undefined;
}

/** What availability and pricing answer from: a name's state and prices, nothing else. */
export type Listing = Pick<Domain, 'name' | 'status' | 'buyNowPriceCents' | 'floorPriceCents' | 'currency'>;

// Raw SQL: a prepared statement (see src/db/prepared.ts), read on every signed availability and pricing request.
export const FIND_LISTING: PreparedStatement = {
  name: 'find_listing_v1',
  text: 'SELECT name, status, buy_now_price_cents, floor_price_cents, currency FROM domains WHERE environment = $1 AND name = $2',
};

/** A row of FIND_LISTING (bigint cents as pg's string, or as a JSON number when read through row_to_json). */
export function listingFromRow(row: Record<string, unknown>): Listing {
  return {
    name: String(row.name),
    status: row.status as DomainStatus,
    buyNowPriceCents: centsFromDb(String(row.buy_now_price_cents)),
    floorPriceCents: centsFromDb(String(row.floor_price_cents)),
    currency: String(row.currency),
  };
}

/**
 * `findDomain` narrowed to what availability and pricing answer, read fresh from Postgres (with
 * Postgres admission on every request; with Redis admission when the listing mirror cannot answer,
 * src/discovery/listing-cache.ts).
 */
export async function findListing(dataSource: DataSource, environment: Environment, name: string): Promise<Listing | undefined> {
  const [row] = await runPrepared(dataSource, FIND_LISTING, [environment, normaliseDomainName(name)]);
  return row ? listingFromRow(row) : undefined;
}

/** For sale (listed) or under a quote (reserved): the names the API answers as "listed". */
export function isOnMarket<T extends Pick<Domain, 'status'>>(domain: T | undefined): domain is T {
  return domain !== undefined && (domain.status === 'listed' || domain.status === 'reserved');
}

export function isAvailable(domain: Pick<Domain, 'status'> | undefined): boolean {
  return domain !== undefined && domain.status === 'listed';
}
