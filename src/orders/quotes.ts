/**
 * Quotes: a firm price and a 10-minute reservation. The reservation is taken here, in one
 * transaction; it ends when the quote's workflow timer fires (expireQuote) or when an order
 * consumes the quote.
 */
import type { DataSource } from 'typeorm';
import type { Environment, QuotaDefaults } from '../config';
import { checkQuoteQuota } from '../partners/quotas';
import { ApiError } from '../api/errors';
import { Domain } from '../db/entities/domain';
import { Quote } from '../db/entities/quote';
import { publicId } from '../ids';
import { databaseNow } from '../db/clock';
import { ROW_LOCK } from '../db/row-lock';

export const QUOTE_RESERVATION_MS = 10 * 60 * 1000;

/**
 * Answers 404 / 409 before any work when the name cannot be quoted; reserveQuote re-checks under
 * lock. A partner asking again for a name its own active quote holds (its first answer lost, say)
 * is told that quote's id in the 409, so it can still place the order with it.
 */
export async function checkQuotable(dataSource: DataSource, environment: Environment, domain: string, partnerId: string): Promise<void> {
  const row = await dataSource.getRepository(Domain).findOne({ select: { id: true, status: true, reservedByQuoteId: true }, where: { environment, name: domain } });
  if (row?.status === 'reserved' && row.reservedByQuoteId) {
    const own = await dataSource.getRepository(Quote).findOneBy({ id: row.reservedByQuoteId, partnerId, status: 'active' });
    if (own) {
      // In the message: the contract gives `details` to validation errors only.
      throw new ApiError('conflict', `${domain} is reserved by your active quote ${own.publicId} until ${own.expiresAt.toISOString()}: place the order with that quote_id`);
    }
  }
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
  input: { quotePublicId: string; partnerId: string; environment: Environment; domain: string },
  quotas: QuotaDefaults,
): Promise<Quote> {
  return dataSource.transaction(async (tx) => {
    // Under the partner's row lock: two quotes racing at the quota cannot both pass.
    await checkQuoteQuota(tx, quotas, input.partnerId, input.environment, true);
    const domain = await tx
      .getRepository(Domain)
      .createQueryBuilder('d')
      .setLock(ROW_LOCK)
      .where('d.environment = :environment AND d.name = :name', { environment: input.environment, name: input.domain })
      .getOne();
    quotableOrThrow(input.domain, domain?.status);
    // Its 10 minutes on the database's clock (every API host shares it); the workflow's timer ends it.
    const now = await databaseNow(tx);
    const quote = await tx.getRepository(Quote).save(
      tx.getRepository(Quote).create({
        publicId: input.quotePublicId,
        partnerId: input.partnerId,
        environment: input.environment,
        domainId: domain!.id,
        domain: input.domain,
        priceCents: domain!.buyNowPriceCents,
        currency: domain!.currency,
        status: 'active',
        createdAt: now,
        expiresAt: new Date(now.getTime() + QUOTE_RESERVATION_MS),
        closedAt: null,
      }),
    );
    await tx.getRepository(Domain).update({ id: domain!.id }, { status: 'reserved', reservedByQuoteId: quote.id });
    return quote;
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
    const quote = await tx.getRepository(Quote).createQueryBuilder('q').setLock(ROW_LOCK).where('q.public_id = :quotePublicId', { quotePublicId }).getOne();
    if (!quote) return 'absent';
    if (quote.status === 'consumed') return 'consumed';
    if (quote.status === 'active') {
      await tx.getRepository(Quote).update({ id: quote.id }, { status: 'expired', closedAt: () => 'now()' });
      await tx.getRepository(Domain).update({ reservedByQuoteId: quote.id, status: 'reserved' }, { status: 'listed', reservedByQuoteId: null });
    }
    return 'expired';
  });
}
