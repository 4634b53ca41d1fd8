/** Money as partners read it (spec "Settlement and reporting", CONTRACT §8): transactions, settlements, payouts. */
import type { DataSource } from 'typeorm';
import { ApiError } from '../api/errors';
import { Cursor, DateBound, decodeCursor, encodeCursor, Limit, isCalendarDate, isCursorTime } from '../api/lists';
import { defineRoute, type RouteSpec } from '../api/route';
import { Currency, CURRENCY_CODE, CurrencyFilter, z } from '../api/schemas';
import { UUID_ANY } from '../ids';
import { listPayouts } from './payouts';
import { closeEndedMonthsOf, listSettlements } from './settlements';
import { listTransactions, transactionTotals } from './transactions';

/** Figures that a reversal in the period can make negative. */
const SignedCents = z.number().int().openapi({ description: 'integer count of minor units (cents); negative when reversals outweigh sales' });
const Day = z.string().openapi({ format: 'date', example: '2026-11-01' });

const Transaction = z
  .object({
    transaction_id: z.string(),
    order_id: z.string().nullable(),
    domain: z.string(),
    payment_model: z.enum(['partner_collected', 'service_collected', 'brokerage']),
    status: z.enum(['completed', 'reversed']),
    gross_cents: SignedCents,
    commission_cents: SignedCents,
    currency: Currency,
    occurred_at: z.string().openapi({ format: 'date-time' }),
    reversed_at: z.string().nullable().openapi({ format: 'date-time', description: 'when the sale was undone (null while it stands); its reversal is booked in the settlement of that month, or the next open one when that month is already closed' }),
    settlement_period: Day.openapi({ description: 'the first day of the settlement month that holds the sale: its own month, or the next open one when it was booked after its month closed' }),
  })
  .openapi('Transaction');

const Settlement = z
  .object({
    settlement_id: z.string(),
    period_start: Day,
    period_end: Day,
    status: z.enum(['open', 'closed']),
    gross_sold_cents: SignedCents,
    commission_retained_cents: SignedCents,
    amount_owed_to_service_cents: SignedCents,
    currency: Currency,
  })
  .openapi('Settlement');

const Payout = z
  .object({
    payout_id: z.string(),
    period_start: Day,
    period_end: Day,
    amount_cents: SignedCents,
    currency: Currency,
    status: z.literal('paid'),
    paid_at: z.string().openapi({ format: 'date-time' }),
    breakdown: z.object({ service_collected_cents: SignedCents, brokerage_cents: SignedCents, referral_cents: SignedCents.openapi({ description: 'referral commission (also listed under /me/payouts)' }), reversed_cents: SignedCents.openapi({ description: 'the part of the figures above that reverses sales (≤ 0): commission taken back for sales undone (refunds, chargebacks) booked since the previous payout, whether an earlier payout or this one paid the sale' }), currency: Currency }),
  })
  .openapi('Payout');

function keyset(cursor: string | undefined): { at: string; id: string } | undefined {
  if (!cursor) return undefined;
  const c = decodeCursor<{ c: string; i: string }>(cursor, ['c', 'i']);
  if (!c || !isCursorTime(c.c) || !UUID_ANY.test(c.i)) throw new ApiError('validation_error', 'cursor is not one this API gave out', [{ field: 'query.cursor', issue: 'invalid' }]);
  return { at: c.c, id: c.i };
}

export function financeRoutes(deps: { dataSource: DataSource }): RouteSpec[] {
  const { dataSource } = deps;
  return [
    defineRoute({
      operationId: 'listTransactions',
      method: 'get',
      path: '/api/partner/v1/transactions',
      scopes: ['report'],
      tag: 'Money',
      summary: 'Every sale through the partner, newest first, with totals over the whole filtered set',
      description:
        '`from`/`to` bound `occurred_at` (inclusive; a date alone is that whole UTC day). Rows and totals are those of one `currency` (default `USD`): sums never add two currencies. `totals.count` counts every row of the filtered set; `gmv_cents` and `commission_cents` sum its `completed` rows. A sale undone after it was booked reads `reversed`; the reversal itself is booked in the settlement period in which it happened.',
      query: z.object({
        from: DateBound('from'),
        to: DateBound('to'),
        status: z.enum(['completed', 'reversed']).optional(),
        payment_model: z.enum(['partner_collected', 'service_collected', 'brokerage']).optional(),
        currency: CurrencyFilter.default('USD').openapi({ description: 'the currency whose sales are listed and totalled (ISO 4217); sums never add two currencies' }),
        limit: Limit,
        cursor: Cursor,
      }),
      response: {
        status: 200,
        description: 'a page of transactions and the totals of the filtered set',
        schema: z
          .object({
            data: z.array(Transaction),
            next_cursor: z.string().nullable(),
            totals: z.object({ count: z.number().int(), gmv_cents: SignedCents, commission_cents: SignedCents, currency: Currency }),
          })
          .openapi('TransactionList'),
      },
      errors: ['validation_error'],
      handler: async ({ query, auth }) => {
        const filter = { from: query.from, to: query.to, status: query.status, paymentModel: query.payment_model, currency: query.currency };
        const [page, totals] = await Promise.all([
          listTransactions(dataSource, auth.partnerId, auth.environment, filter, { limit: query.limit, cursor: keyset(query.cursor) }),
          transactionTotals(dataSource, auth.partnerId, auth.environment, filter),
        ]);
        return { body: { data: page.data, next_cursor: page.next ? encodeCursor({ c: page.next.at, i: page.next.id }) : null, totals } };
      },
    }),
    defineRoute({
      operationId: 'listSettlements',
      method: 'get',
      path: '/api/partner/v1/settlements',
      scopes: ['buy'],
      tag: 'Money',
      summary: 'Monthly statements of partner-collected sales, newest first',
      description:
        'Calendar months in UTC, one row per month and currency (sums never add two currencies), listed from the partner\'s first sale in the month in that currency; newest month first, then by currency. The current month is `open` and its figures are running sums; shortly after a month ends a scheduled workflow closes it, and a closed settlement never changes (a sale or reversal booked after the close lands in the next open month). `amount_owed_to_service_cents = gross_sold_cents - commission_retained_cents`.',
      query: z.object({ currency: CurrencyFilter.optional().openapi({ description: 'only this currency (ISO 4217); all when absent' }), limit: Limit, cursor: Cursor }),
      response: { status: 200, description: 'a page of settlements', schema: z.object({ data: z.array(Settlement), next_cursor: z.string().nullable() }).openapi('SettlementList') },
      errors: ['validation_error'],
      handler: async ({ query, auth }) => {
        const c = query.cursor ? decodeCursor<{ p: string; c: string }>(query.cursor, ['p', 'c']) : undefined;
        if (query.cursor && (!c || !/^\d{4}-\d{2}-01$/.test(c.p) || !isCalendarDate(c.p) || !CURRENCY_CODE.test(c.c))) throw new ApiError('validation_error', 'cursor is not one this API gave out', [{ field: 'query.cursor', issue: 'invalid' }]);
        await closeEndedMonthsOf(dataSource, auth.partnerId, auth.environment);
        const page = await listSettlements(dataSource, auth.partnerId, auth.environment, { limit: query.limit, after: c ? { periodStart: c.p, currency: c.c } : undefined, currency: query.currency });
        return { body: { data: page.data, next_cursor: page.next ? encodeCursor({ p: page.next.periodStart, c: page.next.currency }) : null } };
      },
    }),
    defineRoute({
      operationId: 'listPayouts',
      method: 'get',
      path: '/api/partner/v1/payouts',
      scopes: ['report'],
      tag: 'Money',
      summary: 'What the service paid the partner, newest first',
      description:
        'Commissions on service-collected sales and brokerage shares, paid by the monthly payout run (or an operator\'s run); one payout per currency owed. Each payout is the sum of its lines; `breakdown` splits it by where the money came from.',
      query: z.object({ currency: CurrencyFilter.optional().openapi({ description: 'only this currency (ISO 4217); all when absent' }), limit: Limit, cursor: Cursor }),
      response: { status: 200, description: 'a page of payouts', schema: z.object({ data: z.array(Payout), next_cursor: z.string().nullable() }).openapi('PayoutList') },
      errors: ['validation_error'],
      handler: async ({ query, auth }) => {
        const cursor = keyset(query.cursor);
        const page = await listPayouts(dataSource, auth.partnerId, auth.environment, { limit: query.limit, currency: query.currency, cursor: cursor ? { paidAt: cursor.at, id: cursor.id } : undefined });
        return { body: { data: page.data, next_cursor: page.next ? encodeCursor({ c: page.next.paidAt, i: page.next.id }) : null } };
      },
    }),
  ];
}
