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
import { appendEvent } from '../events/outbox';
import { publicId } from '../ids';
import { loadOrderView, type OrderRow, type OrderView } from './order-view';

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

export async function recordOrder(
  dataSource: DataSource,
  input: { partnerId: string; environment: Environment; idempotencyKey: string; body: OrderRequest; requestId: string },
): Promise<RecordedAnswer> {
  const hash = requestHash(input.body);
  return dataSource.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO idempotency_keys (partner_id, environment, key, operation, request_hash) VALUES ($1, $2, $3, 'create_order', $4)
       ON CONFLICT DO NOTHING`,
      [input.partnerId, input.environment, input.idempotencyKey, hash],
    );
    const [claim] = (await tx.query(
      `SELECT k.request_hash, k.response_status, k.response_body, o.id AS order_id, o.public_id AS order_public_id
       FROM idempotency_keys k LEFT JOIN orders o ON o.id = k.order_id
       WHERE k.partner_id = $1 AND k.environment = $2 AND k.key = $3 FOR UPDATE OF k`,
      [input.partnerId, input.environment, input.idempotencyKey],
    )) as Array<{ request_hash: string; response_status: number | null; response_body: unknown; order_id: string | null; order_public_id: string | null }>;
    if (claim.request_hash !== hash) {
      throw new ApiError('conflict', 'this Idempotency-Key was used with a different request body');
    }
    if (claim.response_status !== null) {
      const body = claim.response_body as { error?: { request_id?: string } };
      return {
        status: claim.response_status,
        body,
        replayed: true,
        order: claim.order_id ? { id: claim.order_id, publicId: claim.order_public_id! } : undefined,
        originalRequestId: body?.error?.request_id,
      };
    }

    let status: number;
    let body: unknown;
    let order: { id: string; publicId: string } | undefined;
    try {
      const view = await createOrderRow(tx, input);
      status = 201;
      body = view.view;
      order = { id: view.id, publicId: view.view.public_id };
    } catch (err) {
      if (!(err instanceof ContractError)) throw err;
      const e = new ApiError(err.code, err.message);
      status = e.status;
      body = errorBody(err.code, err.message, input.requestId);
    }
    await tx.query(
      `UPDATE idempotency_keys SET response_status = $4, response_body = $5, order_id = $6 WHERE partner_id = $1 AND environment = $2 AND key = $3`,
      [input.partnerId, input.environment, input.idempotencyKey, status, JSON.stringify(body), order?.id ?? null],
    );
    return { status, body, replayed: false, order };
  });
}

async function createOrderRow(
  tx: EntityManager,
  input: { partnerId: string; environment: Environment; body: OrderRequest },
): Promise<{ id: string; view: OrderView }> {
  const [quote] = (await tx.query(`SELECT id, status, domain_id, domain, currency FROM quotes WHERE public_id = $1 AND partner_id = $2 AND environment = $3 FOR UPDATE`, [
    input.body.quote_id,
    input.partnerId,
    input.environment,
  ])) as Array<{ id: string; status: string; domain_id: string; domain: string; currency: string }>;
  if (!quote) throw new ContractError('not_found', `no quote ${input.body.quote_id}`);
  if (quote.status === 'expired') throw new ContractError('quote_expired', `quote ${input.body.quote_id} is past its 10-minute window`);
  if (quote.status === 'consumed') throw new ContractError('conflict', `quote ${input.body.quote_id} has already been used by an order`);

  const [domain] = (await tx.query('SELECT buy_now_price_cents, currency FROM domains WHERE id = $1 FOR UPDATE', [quote.domain_id])) as Array<{
    buy_now_price_cents: string;
    currency: string;
  }>;
  const listingPrice = Number(domain.buy_now_price_cents);
  if (input.body.sale_price_cents !== listingPrice) {
    throw new ContractError('price_mismatch', `sale_price_cents ${input.body.sale_price_cents} differs from the listing price ${listingPrice} ${domain.currency}`);
  }

  const [row] = (await tx.query(
    `INSERT INTO orders (public_id, partner_id, environment, quote_id, domain_id, domain, sale_price_cents, currency, external_payment_ref, payment_model, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'partner_collected', 'PAYMENT_RECORDED') RETURNING *`,
    [publicId('ord'), input.partnerId, input.environment, quote.id, quote.domain_id, quote.domain, listingPrice, domain.currency, input.body.external_payment_ref],
  )) as OrderRow[];
  await tx.query(`INSERT INTO order_timeline (order_id, status, at) VALUES ($1, 'PAYMENT_RECORDED', $2)`, [row.id, row.created_at]);
  await tx.query(`UPDATE quotes SET status = 'consumed', closed_at = now() WHERE id = $1`, [quote.id]);
  await tx.query(`UPDATE domains SET status = 'sold', reserved_by_quote_id = NULL, updated_at = now() WHERE id = $1`, [quote.domain_id]);
  const view = await loadOrderView(tx, row);
  await appendEvent(tx, { partnerId: input.partnerId, environment: input.environment, type: 'order.created', data: view, dedupeKey: `order:${row.id}:created` });
  return { id: row.id, view };
}

export async function markWorkflowStarted(dataSource: DataSource, orderId: string): Promise<void> {
  await dataSource.query('UPDATE orders SET workflow_started = true WHERE id = $1 AND NOT workflow_started', [orderId]);
}

export async function findOrder(dataSource: DataSource, partnerId: string, environment: Environment, orderPublicId: string): Promise<OrderView | undefined> {
  const [row] = (await dataSource.query('SELECT * FROM orders WHERE public_id = $1 AND partner_id = $2 AND environment = $3', [
    orderPublicId,
    partnerId,
    environment,
  ])) as OrderRow[];
  return row ? loadOrderView(dataSource.manager, row) : undefined;
}

export interface OrderFilter {
  status?: string;
  domain?: string;
  from?: Date;
  to?: Date;
  limit: number;
  cursor?: { createdAt: Date; id: string };
}

/** Newest first, keyset-paginated on (created_at, id). */
export async function listOrders(
  dataSource: DataSource,
  partnerId: string,
  environment: Environment,
  filter: OrderFilter,
): Promise<{ data: OrderView[]; next: { createdAt: Date; id: string } | null }> {
  const where = ['partner_id = $1', 'environment = $2'];
  const params: unknown[] = [partnerId, environment];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    where.push(clause.replace('?', `$${params.length}`));
  };
  if (filter.status) add('status = ?', filter.status);
  if (filter.domain) add('domain = ?', filter.domain);
  if (filter.from) add('created_at >= ?', filter.from);
  if (filter.to) add('created_at < ?', filter.to);
  if (filter.cursor) {
    params.push(filter.cursor.createdAt, filter.cursor.id);
    where.push(`(created_at, id) < ($${params.length - 1}, $${params.length})`);
  }
  params.push(filter.limit + 1);
  const rows = (await dataSource.query(`SELECT * FROM orders WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`, params)) as OrderRow[];
  const page = rows.slice(0, filter.limit);
  const data = await Promise.all(page.map((r) => loadOrderView(dataSource.manager, r)));
  const last = page[page.length - 1];
  return { data, next: rows.length > filter.limit && last ? { createdAt: last.created_at, id: last.id } : null };
}
