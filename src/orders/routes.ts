/** Partner-collected sales (spec "Partner-collected orders", CONTRACT §6): quotes, orders, refunds. */
import type { DataSource } from 'typeorm';
import { UUID_ANY, UUID_V4 } from '../ids';
import { ApiError } from '../api/errors';
import { Cursor, DateBound, decodeCursor, encodeCursor, Limit, isCursorTime } from '../api/lists';
import { defineRoute, type RouteSpec } from '../api/route';
import type { AuthContext } from '../api/state';
import { Partner } from '../db/entities/partner';
import { Cents, Currency, DomainName, z } from '../api/schemas';
import { ORDER_STATUSES } from '../../workflows/messages';
import { findOrder, listOrders, recordOrder, type CommissionRates } from './orders';
import { checkQuotable, newQuotePublicId, reserveQuote } from './quotes';
import type { QuoteTokenSigner } from './quote-token';
import { REFUND_DECISION_WAIT_MS, requestRefund } from './refund-requests';
import { notifyEventsAppended } from '../webhooks/notify';
import { cancelQuoteReservation, signalQuoteConsumed, startOrderFulfilment, startQuoteReservation } from './start-workflows';
import type { WorkflowStarter } from '../temporal/start';
import { checkQuoteQuota } from '../partners/quotas';
import type { QuotaDefaults } from '../config';


const Quote = z
  .object({
    quote_id: z.string(),
    domain: z.string(),
    price_cents: Cents,
    currency: Currency,
    expires_at: z.string().openapi({ format: 'date-time' }),
    quote_token: z.string().openapi({ description: 'EdDSA JWS; verify with the keys at /api/partner/v1/quote-keys' }),
  })
  .openapi('Quote');

const TimelineEntry = z.object({ status: z.enum(ORDER_STATUSES), at: z.string().openapi({ format: 'date-time' }), detail: z.string().optional() });

const Order = z
  .object({
    public_id: z.string(),
    status: z.enum(ORDER_STATUSES),
    domain: z.string(),
    sale_price_cents: Cents,
    currency: Currency,
    external_payment_ref: z.string(),
    payment_model: z.enum(['partner_collected', 'service_collected']),
    created_at: z.string().openapi({ format: 'date-time' }),
    updated_at: z.string().openapi({ format: 'date-time' }),
    failure_reason: z.string().nullable(),
    client_reference_id: z.string().nullable().openapi({ description: "the partner's reference from its checkout session; null for partner-collected orders" }),
    timeline: z.array(TimelineEntry),
  })
  .openapi('Order');

/** An order event's data (order.*, transfer.*): the order as GET /orders/{public_id} answers it. */
export const OrderEventData = Order;

const Refund = z
  .object({
    refund_id: z.string(),
    order_id: z.string(),
    status: z.enum(['succeeded', 'pending']).openapi({ description: '`pending` (with 202) while the registrar has not yet confirmed that the transfer stopped' }),
    amount_cents: Cents,
    currency: Currency,
    reason: z.string().nullable(),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Refund');

/** order.refunded's data: the order, and the refund. */
export const OrderRefundedEventData = Order.extend({ refund: Refund }).openapi('OrderRefundedEventData');

/** A card dispute of a hosted-checkout sale, in order.dispute_opened and order.dispute_closed. */
const Dispute = z
  .object({
    dispute_id: z.string(),
    status: z.enum(['open', 'won', 'lost']),
    outcome: z.enum(['won', 'lost']).nullable().openapi({ description: 'null while the dispute is open' }),
    amount_cents: z.number().int(),
    currency: z.string(),
    reason: z.string().nullable(),
    opened_at: z.string().openapi({ format: 'date-time' }),
    closed_at: z.string().nullable().openapi({ format: 'date-time' }),
  })
  .openapi('Dispute');
export const OrderDisputeEventData = Order.extend({ dispute: Dispute }).openapi('OrderDisputeEventData');

export interface OrderDeps {
  dataSource: DataSource;
  workflows: WorkflowStarter;
  quoteSigner: QuoteTokenSigner;
  config: { quotas: QuotaDefaults };
}

/** The partner's commission rates, once it is known to be merchant of record. */
async function requireMerchantOfRecord(dataSource: DataSource, partnerId: string): Promise<CommissionRates> {
  const partner = await dataSource.getRepository(Partner).findOne({
    select: { id: true, merchantOfRecord: true, commissionPartnerCollectedBps: true, commissionServiceCollectedBps: true },
    where: { id: partnerId },
  });
  if (!partner?.merchantOfRecord) {
    throw new ApiError('merchant_of_record_required', 'this partner is not merchant of record; sell through hosted checkout (POST /checkout-session)');
  }
  return partner;
}

export function orderRoutes(deps: OrderDeps): RouteSpec[] {
  const { dataSource, workflows, quoteSigner } = deps;
  const merchantOnly = (auth: AuthContext) => requireMerchantOfRecord(dataSource, auth.partnerId);
  return [
    defineRoute({
      operationId: 'createQuote',
      method: 'post',
      path: '/api/partner/v1/quotes',
      scopes: ['buy'],
      tag: 'Orders',
      summary: 'A firm price and a 10-minute reservation',
      description:
        'While the quote is active the domain is reserved for this partner: `available` is false for everyone else and their quotes are 409 `conflict`; the holder\'s own second quote is 409 too, naming the id of its active quote in the message, so a lost first answer can still be ordered on. A partner holds at most its quota of active quotes per environment (100 in sandbox, 1,000 in live unless raised): beyond it 429 `quota_exceeded` with `Retry-After` (seconds until its oldest active quote expires). The reservation ends 10 minutes after creation (a Temporal timer) unless an order consumes the quote first.',
      body: z.object({ domain: DomainName }),
      response: { status: 201, description: 'the quote', schema: Quote },
      errors: ['validation_error', 'merchant_of_record_required', 'not_found', 'conflict', 'quota_exceeded'],
      precondition: merchantOnly,
      handler: async ({ body, auth }) => {
        await checkQuotable(dataSource, auth.environment, body.domain, auth.partnerId);
        // Before any work: a partner at its quota starts no workflow (checked again under lock below).
        await checkQuoteQuota(dataSource.manager, deps.config.quotas, auth.partnerId, auth.environment);
        const quotePublicId = newQuotePublicId();
        // The timer exists before the reservation does, so no reservation can outlive its quote.
        await startQuoteReservation(workflows, { quotePublicId, partnerId: auth.partnerId, environment: auth.environment, domain: body.domain });
        let quote;
        try {
          quote = await reserveQuote(dataSource, { quotePublicId, partnerId: auth.partnerId, environment: auth.environment, domain: body.domain }, deps.config.quotas);
        } catch (err) {
          await cancelQuoteReservation(workflows, quotePublicId).catch(() => undefined);
          throw err;
        }
        const quoteToken = await quoteSigner.sign({
          quoteId: quote.publicId,
          domain: quote.domain,
          priceCents: quote.priceCents,
          currency: quote.currency,
          environment: quote.environment,
          partnerId: quote.partnerId,
          issuedAt: quote.createdAt,
          expiresAt: quote.expiresAt,
        });
        return {
          body: {
            quote_id: quote.publicId,
            domain: quote.domain,
            price_cents: quote.priceCents,
            currency: quote.currency,
            expires_at: quote.expiresAt.toISOString(),
            quote_token: quoteToken,
          },
        };
      },
    }),
    defineRoute({
      operationId: 'createOrder',
      method: 'post',
      path: '/api/partner/v1/orders',
      scopes: ['buy'],
      tag: 'Orders',
      summary: 'Record a sale the partner has already charged',
      description:
        'Requires `Idempotency-Key` (UUID v4). The same key with the same body answers the first response again with `Idempotent-Replayed: true`; with a different body it is 409 `conflict`. `sale_price_cents` must equal the quote\'s `price_cents` (422 `price_mismatch`); the order is recorded at the quote\'s price and currency whatever the listing became meanwhile; a quote past its 10 minutes is 422 `quote_expired`; a quote already used is 409 `conflict`; another partner\'s or an unknown quote is 404. Fulfilment then runs as a workflow (see the order statuses in the README).',
      headers: z.object({ 'Idempotency-Key': z.string().uuid().openapi({ description: 'UUID v4, unique per operation' }) }),
      body: z.object({
        quote_id: z.string().min(1).max(100),
        external_payment_ref: z.string().trim().min(1).max(200).openapi({ description: 'the partner\'s payment reference; in sandbox it also selects failure paths (README)' }),
        sale_price_cents: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
      }),
      response: { status: 201, description: 'the recorded order', schema: Order },
      errors: ['validation_error', 'merchant_of_record_required', 'not_found', 'conflict', 'price_mismatch', 'quote_expired'],
      precondition: merchantOnly,
      handler: async ({ body, auth, headers, requestId, checked: rates }) => {
        const key = headers['idempotency-key'];
        if (typeof key !== 'string' || !UUID_V4.test(key)) {
          throw new ApiError('validation_error', 'the Idempotency-Key header must be a UUID v4', [{ field: 'header.Idempotency-Key', issue: key ? 'not a UUID v4' : 'missing' }]);
        }
        const answer = await recordOrder(dataSource, { partnerId: auth.partnerId, environment: auth.environment, idempotencyKey: key.toLowerCase(), body, requestId, rates });
        if (answer.order) {
          const order = answer.body as { domain: string };
          // The workflow records that it started (its first step), so the answer waits for one write less.
          await startOrderFulfilment(workflows, { orderId: answer.order.id, orderPublicId: answer.order.publicId, partnerId: auth.partnerId, environment: auth.environment, domain: order.domain });
          // Best effort and not awaited: it only ends the quote's timer early (at minute ten it finds the quote consumed).
          if (!answer.replayed) void signalQuoteConsumed(workflows, body.quote_id).catch(() => undefined);
          await notifyEventsAppended(dataSource, workflows, auth.partnerId, auth.environment);
        }
        const replayHeaders: Record<string, string> = answer.replayed
          ? { 'Idempotent-Replayed': 'true', ...(answer.originalRequestId ? { 'X-Request-Id': answer.originalRequestId } : {}) }
          : {};
        return { status: answer.status, body: answer.body as never, headers: replayHeaders };
      },
    }),
    defineRoute({
      operationId: 'listOrders',
      method: 'get',
      path: '/api/partner/v1/orders',
      scopes: ['search', 'buy'],
      tag: 'Orders',
      summary: "The partner's orders, newest first",
      query: z.object({
        status: z.enum(ORDER_STATUSES).optional(),
        domain: DomainName.optional(),
        from: DateBound('from'),
        to: DateBound('to'),
        limit: Limit,
        cursor: Cursor,
      }),
      response: { status: 200, description: 'a page of orders', schema: z.object({ data: z.array(Order), next_cursor: z.string().nullable() }).openapi('OrderList') },
      errors: ['validation_error'],
      handler: async ({ query, auth }) => {
        const cursor = query.cursor ? decodeCursor<{ c: string; i: string }>(query.cursor, ['c', 'i']) : undefined;
        if (cursor && (!isCursorTime(cursor.c) || !UUID_ANY.test(cursor.i))) throw new ApiError('validation_error', 'cursor is not one this API gave out', [{ field: 'query.cursor', issue: 'invalid' }]);
        if (query.cursor && !cursor) throw new ApiError('validation_error', 'cursor is not one this API gave out', [{ field: 'query.cursor', issue: 'invalid' }]);
        const page = await listOrders(dataSource, auth.partnerId, auth.environment, {
          status: query.status,
          domain: query.domain,
          from: query.from,
          to: query.to,
          limit: query.limit,
          cursor: cursor ? { createdAt: cursor.c, id: cursor.i } : undefined,
        });
        return { body: { data: page.data, next_cursor: page.next ? encodeCursor({ c: page.next.createdAt, i: page.next.id }) : null } };
      },
    }),
    defineRoute({
      operationId: 'getOrder',
      method: 'get',
      path: '/api/partner/v1/orders/{public_id}',
      scopes: ['search', 'buy'],
      tag: 'Orders',
      summary: 'One order with its fulfilment status and timeline',
      params: z.object({ public_id: z.string().min(1).max(100) }),
      response: { status: 200, description: 'the order', schema: Order },
      errors: ['not_found'],
      handler: async ({ params, auth }) => {
        const order = await findOrder(dataSource, auth.partnerId, auth.environment, params.public_id);
        if (!order) throw new ApiError('not_found', `no order ${params.public_id}`);
        return { body: order };
      },
    }),
    defineRoute({
      operationId: 'createRefund',
      method: 'post',
      path: '/api/partner/v1/refunds',
      scopes: ['buy'],
      tag: 'Orders',
      summary: 'Refund a partner-collected order before TRANSFER_COMPLETED',
      description:
        `The order's fulfilment workflow decides. Before a transfer is requested the refund is granted at once (201). While a transfer is in flight the registrar is asked to cancel it and the refund is granted only once the registrar confirms (201); if the registry completed the transfer first, the answer is 422 \`refund_not_allowed\` and the order is TRANSFER_COMPLETED. The request waits up to ${REFUND_DECISION_WAIT_MS / 1000} s for that decision; when it takes longer the answer is 202 with the refund \`pending\`, the outcome follows as the \`order.refunded\` event (or \`transfer.completed\`), and asking again answers the same refund. An order that already has its refund answers it with 200. A refunded order's name goes back on the market only if the order still holds it (after a failed transfer it was listed again and may have been sold since).`,
      body: z.object({ order_id: z.string().min(1).max(100), reason: z.string().trim().max(500).optional() }),
      response: { status: 201, description: 'the refund (200 when it already existed, 202 while pending)', schema: Refund },
      errors: ['validation_error', 'not_found', 'refund_not_allowed', 'conflict', 'service_unavailable'],
      handler: async ({ body, auth }) => {
        const answer = await requestRefund({ dataSource, workflows }, { partnerId: auth.partnerId, environment: auth.environment, orderPublicId: body.order_id, reason: body.reason ?? null });
        return { status: answer.status, body: answer.refund };
      },
    }),
  ];
}
