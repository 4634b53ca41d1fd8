/** Partner-collected sales (spec "Partner-collected orders", CONTRACT §6): quotes, orders, refunds. */
import type { DataSource } from 'typeorm';
import { UUID_V4 } from '../ids';
import { ApiError } from '../api/errors';
import { Cursor, DateBound, decodeCursor, encodeCursor, Limit } from '../api/lists';
import { defineRoute, type RouteSpec } from '../api/route';
import { Cents, Currency, DomainName, z } from '../api/schemas';
import { ORDER_STATUSES, orderWorkflowId, refundRequestedSignal } from '../../workflows/messages';
import { findOrder, listOrders, markWorkflowStarted, recordOrder } from './orders';
import { checkQuotable, newQuotePublicId, reserveQuote } from './quotes';
import type { QuoteTokenSigner } from './quote-token';
import { requestRefund } from './refunds';
import { notifyEventsAppended } from '../webhooks/notify';
import { cancelQuoteReservation, signalQuoteConsumed, startOrderFulfilment, startQuoteReservation, type WorkflowStarter } from './start-workflows';


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
    timeline: z.array(TimelineEntry),
  })
  .openapi('Order');

const Refund = z
  .object({
    refund_id: z.string(),
    order_id: z.string(),
    status: z.literal('succeeded'),
    amount_cents: Cents,
    currency: Currency,
    reason: z.string().nullable(),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Refund');

export interface OrderDeps {
  dataSource: DataSource;
  workflows: WorkflowStarter;
  quoteSigner: QuoteTokenSigner;
}

async function requireMerchantOfRecord(dataSource: DataSource, partnerId: string): Promise<void> {
  const [partner] = (await dataSource.query('SELECT merchant_of_record FROM partners WHERE id = $1', [partnerId])) as Array<{ merchant_of_record: boolean }>;
  if (!partner?.merchant_of_record) {
    throw new ApiError('merchant_of_record_required', 'this partner is not merchant of record; sell through hosted checkout (POST /checkout-session)');
  }
}

export function orderRoutes(deps: OrderDeps): RouteSpec[] {
  const { dataSource, workflows, quoteSigner } = deps;
  return [
    defineRoute({
      operationId: 'createQuote',
      method: 'post',
      path: '/api/partner/v1/quotes',
      scopes: ['buy'],
      tag: 'Orders',
      summary: 'A firm price and a 10-minute reservation',
      description:
        'While the quote is active the domain is reserved for this partner: `available` is false for everyone else and their quotes are 409 `conflict`. The reservation ends 10 minutes after creation (a Temporal timer) unless an order consumes the quote first.',
      body: z.object({ domain: DomainName }),
      response: { status: 201, description: 'the quote', schema: Quote },
      errors: ['validation_error', 'merchant_of_record_required', 'not_found', 'conflict'],
      handler: async ({ body, auth }) => {
        await requireMerchantOfRecord(dataSource, auth.partnerId);
        await checkQuotable(dataSource, auth.environment, body.domain);
        const quotePublicId = newQuotePublicId();
        // The timer exists before the reservation does, so no reservation can outlive its quote.
        await startQuoteReservation(workflows, { quotePublicId, partnerId: auth.partnerId, environment: auth.environment, domain: body.domain });
        let quote;
        try {
          quote = await reserveQuote(dataSource, { quotePublicId, partnerId: auth.partnerId, environment: auth.environment, domain: body.domain, now: new Date() });
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
        'Requires `Idempotency-Key` (UUID v4). The same key with the same body answers the first response again with `Idempotent-Replayed: true`; with a different body it is 409 `conflict`. `sale_price_cents` must equal the current listing price (422 `price_mismatch`); a quote past its 10 minutes is 422 `quote_expired`; a quote already used is 409 `conflict`; another partner\'s or an unknown quote is 404. Fulfilment then runs as a workflow (see the order statuses in the README).',
      headers: z.object({ 'Idempotency-Key': z.string().uuid().openapi({ description: 'UUID v4, unique per operation' }) }),
      body: z.object({
        quote_id: z.string().min(1).max(100),
        external_payment_ref: z.string().trim().min(1).max(200).openapi({ description: 'the partner\'s payment reference; in sandbox it also selects failure paths (README)' }),
        sale_price_cents: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
      }),
      response: { status: 201, description: 'the recorded order', schema: Order },
      errors: ['validation_error', 'merchant_of_record_required', 'not_found', 'conflict', 'price_mismatch', 'quote_expired'],
      handler: async ({ body, auth, headers, requestId }) => {
        const key = headers['idempotency-key'];
        if (typeof key !== 'string' || !UUID_V4.test(key)) {
          throw new ApiError('validation_error', 'the Idempotency-Key header must be a UUID v4', [{ field: 'header.Idempotency-Key', issue: key ? 'not a UUID v4' : 'missing' }]);
        }
        await requireMerchantOfRecord(dataSource, auth.partnerId);
        const answer = await recordOrder(dataSource, { partnerId: auth.partnerId, environment: auth.environment, idempotencyKey: key.toLowerCase(), body, requestId });
        if (answer.order) {
          const order = answer.body as { domain: string };
          await startOrderFulfilment(workflows, { orderId: answer.order.id, orderPublicId: answer.order.publicId, partnerId: auth.partnerId, environment: auth.environment, domain: order.domain });
          await markWorkflowStarted(dataSource, answer.order.id);
          if (!answer.replayed) await signalQuoteConsumed(workflows, body.quote_id).catch(() => undefined);
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
        if (query.cursor && !cursor) throw new ApiError('validation_error', 'cursor is not one this API gave out', [{ field: 'query.cursor', issue: 'invalid' }]);
        const page = await listOrders(dataSource, auth.partnerId, auth.environment, {
          status: query.status,
          domain: query.domain,
          from: query.from,
          to: query.to,
          limit: query.limit,
          cursor: cursor ? { createdAt: new Date(cursor.c), id: cursor.i } : undefined,
        });
        return { body: { data: page.data, next_cursor: page.next ? encodeCursor({ c: page.next.createdAt.toISOString(), i: page.next.id }) : null } };
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
        'Stops the transfer, lists the domain again and ends the order REFUNDED. At or after TRANSFER_COMPLETED it is 422 `refund_not_allowed`. Asking again for a refunded order answers the existing refund with 200.',
      body: z.object({ order_id: z.string().min(1).max(100), reason: z.string().trim().max(500).optional() }),
      response: { status: 201, description: 'the refund (200 when it already existed)', schema: Refund },
      errors: ['validation_error', 'not_found', 'refund_not_allowed'],
      handler: async ({ body, auth }) => {
        const { refund, created } = await requestRefund(dataSource, { partnerId: auth.partnerId, environment: auth.environment, orderPublicId: body.order_id, reason: body.reason });
        if (created) {
          // Best effort: the workflow's next step also finds the order refunded and stops.
          await workflows.client.workflow.getHandle(orderWorkflowId(body.order_id)).signal(refundRequestedSignal).catch(() => undefined);
          await notifyEventsAppended(dataSource, workflows, auth.partnerId, auth.environment);
        }
        return { status: created ? 201 : 200, body: refund };
      },
    }),
  ];
}
