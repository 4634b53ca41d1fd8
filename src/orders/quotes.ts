/**
 * Quotes: a firm price and a 10-minute reservation. The reservation is taken here, in one
 * transaction; it ends when the quote's workflow timer fires (expireQuote) or when an order
 * consumes the quote. Nothing here compares clocks: Temporal's timer decides expiry.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { ApiError } from '../api/errors';
import { publicId } from '../ids';

export const QUOTE_RESERVATION_MS = 10 * 60 * 1000;

export interface QuoteRow {
  id: string;
  publicId: string;
  partnerId: string;
  environment: Environment;
  domainId: string;
  domain: string;
  priceCents: number;
  currency: string;
  status: 'active' | 'consumed' | 'expired';
  createdAt: Date;
  expiresAt: Date;
}

/** Answers 404 / 409 before any work when the name cannot be quoted; reserveQuote re-checks under lock. */
export async function checkQuotable(dataSource: DataSource, environment: Environment, domain: string): Promise<void> {
  const [row] = (await dataSource.query('SELECT status FROM domains WHERE environment = $1 AND name = $2', [environment, domain])) as Array<{ status: string }>;
  quotableOrThrow(domain, row?.status);
}

function quotableOrThrow(domain: string, status: string | undefined): void {
  if (status === undefined || status === 'unlisted') throw new ApiError('not_found', `${domain} is not listed`);
  if (status === 'reserved') throw new ApiError('conflict', `${domain} is reserved by an active quote`);
  if (status === 'sold') throw new ApiError('conflict', `${domain} has been sold`);
}

/** Takes the reservation and records the quote, atomically; `publicId` is chosen by the caller (its workflow already exists). */
export async function reserveQuote(
  dataSource: DataSource,
  input: { quotePublicId: string; partnerId: string; environment: Environment; domain: string; now: Date },
): Promise<QuoteRow> {
  return dataSource.transaction(async (tx) => {
    const [domain] = (await tx.query(
      'SELECT id, status, buy_now_price_cents, currency FROM domains WHERE environment = $1 AND name = $2 FOR UPDATE',
      [input.environment, input.domain],
    )) as Array<{ id: string; status: string; buy_now_price_cents: string; currency: string }>;
    quotableOrThrow(input.domain, domain?.status);
    const expiresAt = new Date(input.now.getTime() + QUOTE_RESERVATION_MS);
    const [quote] = (await tx.query(
      `INSERT INTO quotes (public_id, partner_id, environment, domain_id, domain, price_cents, currency, status, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $9) RETURNING id`,
      [input.quotePublicId, input.partnerId, input.environment, domain.id, input.domain, domain.buy_now_price_cents, domain.currency, input.now, expiresAt],
    )) as Array<{ id: string }>;
    await tx.query(`UPDATE domains SET status = 'reserved', reserved_by_quote_id = $2, updated_at = now() WHERE id = $1`, [domain.id, quote.id]);
    return {
      id: quote.id,
      publicId: input.quotePublicId,
      partnerId: input.partnerId,
      environment: input.environment,
      domainId: domain.id,
      domain: input.domain,
      priceCents: Number(domain.buy_now_price_cents),
      currency: domain.currency,
      status: 'active',
      createdAt: input.now,
      expiresAt,
    };
  });
}

export function newQuotePublicId(): string {
  return publicId('quo');
}

/**
 * The quote's timer fired: an active quote expires and its domain is listed again. A quote
 * already consumed by an order, or never recorded, is left alone. Safe to retry.
 */
export async function expireQuote(dataSource: DataSource, quotePublicId: string): Promise<'expired' | 'consumed' | 'absent'> {
  return dataSource.transaction(async (tx) => {
    const [quote] = (await tx.query('SELECT id, status FROM quotes WHERE public_id = $1 FOR UPDATE', [quotePublicId])) as Array<{ id: string; status: string }>;
    if (!quote) return 'absent';
    if (quote.status === 'consumed') return 'consumed';
    if (quote.status === 'active') {
      await tx.query(`UPDATE quotes SET status = 'expired', closed_at = now() WHERE id = $1`, [quote.id]);
      await tx.query(`UPDATE domains SET status = 'listed', reserved_by_quote_id = NULL, updated_at = now() WHERE reserved_by_quote_id = $1 AND status = 'reserved'`, [quote.id]);
    }
    return 'expired';
  });
}
