/**
 * Partner-collected orders: recording a sale against a quote, exactly once per Idempotency-Key.
 *
 * The key is claimed, the business checks run and their answer (success or contract error) is
 * stored, all in one transaction holding the key's row lock: a racing identical request waits on
 * that lock and then replays the stored answer. Starting the fulfilment workflow happens after
 * commit and is idempotent (workflow id from the order id), so a process that dies in between
 * leaves an order whose workflow the partner's retry — or the recovery sweep — starts.
 */
import { createHash } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { ApiError, errorBody, type ErrorCode } from '../api/errors';
import { Domain } from '../db/entities/domain';
import { IdempotencyKey } from '../db/entities/idempotency-key';
import { Order, type PaymentModel } from '../db/entities/order';
import { OrderTimelineEntry } from '../db/entities/order-timeline-entry';
import { Partner } from '../db/entities/partner';
import { Quote } from '../db/entities/quote';
import { appendEvent } from '../events/outbox';
import { publicId } from '../ids';
import { loadOrderView, orderView, type OrderView } from './order-view';
import { ROW_LOCK } from '../db/row-lock';

export interface OrderRequest {
  quote_id: string;
  external_payment_ref: string;
  sale_price_cents: number;
}

export interface RecordedAnswer {
  status: number;
  body: unknown;
  replayed: boolean;
  /** Set when the answer is an order: its fulfilment must be running. */
  order?: { id: string; publicId: string };
  /** For a replayed error, the request id the body carries. */
  originalRequestId?: string;
}

export function requestHash(body: OrderRequest): string {
  const canonical = JSON.stringify({ quote_id: body.quote_id, external_payment_ref: body.external_payment_ref, sale_price_cents: body.sale_price_cents });
  return createHash('sha256').update(canonical).digest('hex');
}

class ContractError {
  constructor(readonly code: ErrorCode, readonly message: string) {}
}

/** The partner's commission rates, as read when the order's request came in (fixed on the order). */
export type CommissionRates = Pick<Partner, 'commissionPartnerCollectedBps' | 'commissionServiceCollectedBps'>;

export async function recordOrder(
  dataSource: DataSource,
  input: { partnerId: string; environment: Environment; idempotencyKey: string; body: OrderRequest; requestId: string; rates: CommissionRates },
): Promise<RecordedAnswer> {
  const hash = requestHash(input.body);
  const keyOf = { partnerId: input.partnerId, environment: input.environment, key: input.idempotencyKey };
  return dataSource.transaction(async (tx) => {
    const keys = tx.getRepository(IdempotencyKey);
    // A key inserted here is this transaction's, locked by the insert until commit: nothing to
    // read back. A key already there (a retry, or a racing request) is read under its row lock,
    // which waits for the transaction that inserted it.
    const inserted = await keys.createQueryBuilder().insert().values({ ...keyOf, operation: 'create_order', requestHash: hash }).orIgnore().returning(['key']).execute();
    const claim =
      (inserted.raw as unknown[]).length === 1
        ? { requestHash: hash, responseStatus: null, responseBody: null, orderId: null }
        : await keys
            .createQueryBuilder('k')
            .setLock(ROW_LOCK)
            .where('k.partner_id = :partnerId AND k.environment = :environment AND k.key = :key', keyOf)
            .getOneOrFail();
    if (claim.requestHash !== hash) {
      throw new ApiError('conflict', 'this Idempotency-Key was used with a different request body');
    }
    if (claim.responseStatus !== null) {
      const body = claim.responseBody as { error?: { request_id?: string }; public_id?: string };
      return {
        status: claim.responseStatus,
        body,
        replayed: true,
        order: claim.orderId ? { id: claim.orderId, publicId: body.public_id! } : undefined,
        originalRequestId: body?.error?.request_id,
      };
    }

    let status: number;
    let body: unknown;
    let order: { id: string; publicId: string } | undefined;
    try {
      const created = await createOrderRow(tx, input);
      status = 201;
      body = created.view;
      order = { id: created.id, publicId: created.view.public_id };
    } catch (err) {
      if (!(err instanceof ContractError)) throw err;
      status = new ApiError(err.code, err.message).status;
      body = errorBody(err.code, err.message, input.requestId);
    }
    await keys.update(keyOf, { responseStatus: status, responseBody: body as object, orderId: order?.id ?? null });
    return { status, body, replayed: false, order };
  });
}

async function createOrderRow(tx: EntityManager, input: { partnerId: string; environment: Environment; body: OrderRequest; rates: CommissionRates }): Promise<{ id: string; view: OrderView }> {
  const { entities, raw } = await tx
    .getRepository(Quote)
    .createQueryBuilder('q')
    // The database's clock decides lateness: an order must not ride on a quote whose timer is late.
    .addSelect('q.expires_at <= now()', 'past_expiry')
    .setLock(ROW_LOCK)
    .where('q.public_id = :quoteId AND q.partner_id = :partnerId AND q.environment = :environment', {
      quoteId: input.body.quote_id,
      partnerId: input.partnerId,
      environment: input.environment,
    })
    .getRawAndEntities<{ past_expiry: boolean }>();
  const quote = entities[0];
  if (!quote) throw new ContractError('not_found', `no quote ${input.body.quote_id}`);
  if (quote.status === 'expired' || raw[0].past_expiry) throw new ContractError('quote_expired', `quote ${input.body.quote_id} is past its 10-minute window`);
  if (quote.status === 'consumed') throw new ContractError('conflict', `quote ${input.body.quote_id} has already been used by an order`);

  // A quote holds its price (CONTRACT §6): the order is checked and recorded at the quote's price
  // and currency, whatever an inventory import made of the listing meanwhile.
  if (input.body.sale_price_cents !== quote.priceCents) {
    throw new ContractError('price_mismatch', `sale_price_cents ${input.body.sale_price_cents} differs from the quote's price ${quote.priceCents} ${quote.currency}`);
  }
  const domain = await tx.getRepository(Domain).createQueryBuilder('d').setLock(ROW_LOCK).where('d.id = :id', { id: quote.domainId }).getOneOrFail();
  await tx.getRepository(Quote).update({ id: quote.id }, { status: 'consumed', closedAt: () => 'now()' });
  return recordSale(tx, {
    partnerId: input.partnerId,
    environment: input.environment,
    domain,
    price: { cents: quote.priceCents, currency: quote.currency },
    paymentModel: 'partner_collected',
    externalPaymentRef: input.body.external_payment_ref,
    quoteId: quote.id,
    rates: input.rates,
  });
}

/**
 * A sale recorded, in the caller's transaction holding the domain's row lock: the order at
 * PAYMENT_RECORDED with the partner's rate for its payment model fixed on it, its first timeline
 * entry, the name sold and held by this order, and `order.created`. Shared by partner-collected
 * orders and hosted checkout, so both sell by the same rules.
 */
export async function recordSale(
  tx: EntityManager,
  sale: {
    partnerId: string;
    environment: Environment;
    domain: Domain;
    /** What the buyer was charged: the quote's or the checkout session's price, never read again from the listing. */
    price: { cents: number; currency: string };
    paymentModel: PaymentModel;
    externalPaymentRef: string;
    quoteId?: string;
    checkoutSessionId?: string;
    clientReferenceId?: string | null;
    /** The partner's rates when the caller has read them already (else read here). */
    rates?: CommissionRates;
  },
): Promise<{ id: string; publicId: string; view: OrderView }> {
  const partner = sale.rates ?? (await tx.getRepository(Partner).findOneByOrFail({ id: sale.partnerId }));
  const orders = tx.getRepository(Order);
  const order = orders.create({
    publicId: publicId('ord'),
    partnerId: sale.partnerId,
    environment: sale.environment,
    quoteId: sale.quoteId ?? null,
    checkoutSessionId: sale.checkoutSessionId ?? null,
    clientReferenceId: sale.clientReferenceId ?? null,
    domainId: sale.domain.id,
    domain: sale.domain.name,
    salePriceCents: sale.price.cents,
    currency: sale.price.currency,
    externalPaymentRef: sale.externalPaymentRef,
    paymentModel: sale.paymentModel,
    commissionBps: sale.paymentModel === 'partner_collected' ? partner.commissionPartnerCollectedBps : partner.commissionServiceCollectedBps,
    status: 'PAYMENT_RECORDED',
    failureReason: null,
  });
  // An insert, not a save (no look-up of what to update); its id and timestamps are filled in from RETURNING.
  await orders.insert(order);
  const first = { orderId: order.id, status: 'PAYMENT_RECORDED' as const, at: order.createdAt, detail: null };
  await tx.getRepository(OrderTimelineEntry).insert(first);
  await tx.getRepository(Domain).update({ id: sale.domain.id }, { status: 'sold', reservedByQuoteId: null, heldByOrderId: order.id });
  // A new order's timeline is the entry just written.
  const view = orderView(order, [first]);
  await appendEvent(tx, { partnerId: sale.partnerId, environment: sale.environment, type: 'order.created', data: view, dedupeKey: `order:${order.id}:created` });
  return { id: order.id, publicId: order.publicId, view };
}

export async function markWorkflowStarted(dataSource: DataSource, orderId: string): Promise<void> {
  await dataSource.getRepository(Order).update({ id: orderId, workflowStarted: false }, { workflowStarted: true });
}

export async function findOrderRow(manager: EntityManager, partnerId: string, environment: Environment, orderPublicId: string): Promise<Order | null> {
  return manager.getRepository(Order).findOneBy({ publicId: orderPublicId, partnerId, environment });
}

export async function findOrder(dataSource: DataSource, partnerId: string, environment: Environment, orderPublicId: string): Promise<OrderView | undefined> {
  const row = await findOrderRow(dataSource.manager, partnerId, environment, orderPublicId);
  return row ? loadOrderView(dataSource.manager, row) : undefined;
}

export interface OrderFilter {
  status?: string;
  domain?: string;
  from?: Date;
  to?: Date;
  limit: number;
  /** The last row of the previous page: its creation time to the microsecond, as Postgres prints it, and its id. */
  cursor?: { createdAt: string; id: string };
}

/**
 * Newest first, keyset-paginated on (created_at, id). The cursor carries created_at at
 * Postgres' own precision (microseconds), not a JavaScript Date's milliseconds, so rows created
 * within one millisecond are neither skipped nor repeated.
 */
export async function listOrders(
  dataSource: DataSource,
  partnerId: string,
  environment: Environment,
  filter: OrderFilter,
): Promise<{ data: OrderView[]; next: { createdAt: string; id: string } | null }> {
  const q = dataSource
    .getRepository(Order)
    .createQueryBuilder('o')
    .addSelect(`to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`, 'cursor_at')
    .where('o.partner_id = :partnerId AND o.environment = :environment', { partnerId, environment });
  if (filter.status) q.andWhere('o.status = :status', { status: filter.status });
  if (filter.domain) q.andWhere('o.domain = :domain', { domain: filter.domain });
  if (filter.from) q.andWhere('o.created_at >= :from', { from: filter.from });
  if (filter.to) q.andWhere('o.created_at < :to', { to: filter.to });
  if (filter.cursor) q.andWhere('(o.created_at, o.id) < (CAST(:cursorAt AS timestamptz), CAST(:cursorId AS uuid))', { cursorAt: filter.cursor.createdAt, cursorId: filter.cursor.id });
  const { entities, raw } = await q
    .orderBy('o.created_at', 'DESC')
    .addOrderBy('o.id', 'DESC')
    .limit(filter.limit + 1)
    .getRawAndEntities<{ cursor_at: string }>();
  const page = entities.slice(0, filter.limit);
  const data = await Promise.all(page.map((r) => loadOrderView(dataSource.manager, r)));
  const last = page[page.length - 1];
  return { data, next: entities.length > filter.limit && last ? { createdAt: raw[filter.limit - 1].cursor_at, id: last.id } : null };
}
