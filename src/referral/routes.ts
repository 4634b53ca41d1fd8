/** Referral for partners linked to an affiliate account (CONTRACT §11); 403 affiliate_account_required otherwise. */
import type { DataSource } from 'typeorm';
import { Cursor, DateBound, decodeCursor, encodeCursor, isCursorTime, Limit } from '../api/lists';
import { UUID_ANY } from '../ids';
import type { Environment } from '../config';
import { ApiError } from '../api/errors';
import { defineRoute, type RouteSpec } from '../api/route';
import type { AuthContext } from '../api/state';
import { Currency, CurrencyFilter, DomainName, z } from '../api/schemas';
import { ReferralLink } from '../db/entities/referral';
import { analytics, clickTotals, commissionLines, linkStats, listSales, referralPayouts, REFERRAL_CURRENCY } from './reports';
import { createLink, linkUrl, PRODUCTS, requireAffiliate } from './links';
import { publicOrigin as baseUrl } from '../api/public-origin';

const SignedCents = z.number().int();
const Link = z
  .object({
    link_id: z.string(),
    kind: z.enum(['generic', 'domain', 'product']),
    url: z.string().openapi({ format: 'uri', description: 'public; opening it records a click and redirects (302)' }),
    domain: z.string().optional(),
    product: z.string().optional(),
    campaign: z.string().optional(),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Link');

function linkView(link: ReferralLink, base: string) {
  return {
    link_id: link.publicId,
    kind: link.kind,
    url: linkUrl(base, link),
    ...(link.domain ? { domain: link.domain } : {}),
    ...(link.product ? { product: link.product } : {}),
    ...(link.campaign ? { campaign: link.campaign } : {}),
    created_at: link.createdAt.toISOString(),
  };
}

/** Echoes the window as asked (a date or date-time), or null. */
const echo = (value: unknown) => (typeof value === 'string' ? value : null);

/**
 * A page over an in-order array of append-only items: the cursor names the last item shown, so a
 * newer item arriving between two calls (at the head of a newest-first list) neither repeats an
 * item on the next page nor skips one.
 */
function page<T>(items: T[], limit: number, cursor: string | undefined, keyOf: (item: T) => string): { data: T[]; next_cursor: string | null } {
  let start = 0;
  if (cursor) {
    const after = decodeCursor<{ k: string }>(cursor, ['k'])?.k;
    start = after === undefined ? -1 : items.findIndex((item) => keyOf(item) === after) + 1;
    if (start <= 0) throw new ApiError('validation_error', 'cursor is not one this API gave out', [{ field: 'query.cursor', issue: 'invalid' }]);
  }
  const data = items.slice(start, start + limit);
  return { data, next_cursor: start + limit < items.length ? encodeCursor({ k: keyOf(data[data.length - 1]) }) : null };
}

/**
 * A page of the partner's links, newest first, read from the database a page at a time (keyset on
 * created_at and id), however many links the partner has made.
 */
async function linksPage(dataSource: DataSource, partnerId: string, environment: Environment, limit: number, cursor: string | undefined): Promise<{ data: ReferralLink[]; next_cursor: string | null }> {
  const invalid = () => new ApiError('validation_error', 'cursor is not one this API gave out', [{ field: 'query.cursor', issue: 'invalid' }]);
  const q = dataSource
    .getRepository(ReferralLink)
    .createQueryBuilder('l')
    .addSelect(`to_char(l.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`, 'cursor_at')
    .where('l.partner_id = :partnerId AND l.environment = :environment', { partnerId, environment });
  if (cursor) {
    const c = decodeCursor<{ c: string; i: string }>(cursor, ['c', 'i']);
    if (!c || !isCursorTime(c.c) || !UUID_ANY.test(c.i)) throw invalid();
    q.andWhere('(l.created_at, l.id) < (CAST(:at AS timestamptz), CAST(:id AS uuid))', { at: c.c, id: c.i });
  }
  const { entities, raw } = await q.orderBy('l.created_at', 'DESC').addOrderBy('l.id', 'DESC').limit(limit + 1).getRawAndEntities<{ cursor_at: string }>();
  const data = entities.slice(0, limit);
  return { data, next_cursor: entities.length > limit ? encodeCursor({ c: raw[limit - 1].cursor_at, i: data[limit - 1].id }) : null };
}

export function referralRoutes(deps: { dataSource: DataSource; publicBaseUrl?: string }): RouteSpec[] {
  const { dataSource } = deps;
  const affiliateOnly = (auth: AuthContext) => requireAffiliate(dataSource, auth.partnerId);
  const windowQuery = z.object({ from: DateBound('from'), to: DateBound('to') });
  // Sums never add two currencies (CONTRACT §8): each report's money is one currency's.
  const currency = CurrencyFilter.default(REFERRAL_CURRENCY).openapi({ description: 'the currency whose money figures are answered (ISO 4217); counts take every currency' });
  const errors = ['validation_error', 'affiliate_account_required'] as const;
  return [
    defineRoute({
      operationId: 'createLink',
      method: 'post',
      path: '/api/partner/v1/links',
      scopes: ['refer'],
      tag: 'Referral',
      summary: 'A tracking link to a domain, the marketplace, or a product page',
      description: `\`domain\` links need \`domain\` (a name in your environment's inventory); \`product\` links need \`product\` (${PRODUCTS.join(', ')}). The URL records a click and redirects (302) to the page; the buyer's browser keeps the attribution for 30 days (the last link clicked wins).`,
      body: z.object({
        kind: z.enum(['generic', 'domain', 'product']),
        domain: DomainName.optional(),
        product: z.enum(PRODUCTS).optional(),
        campaign: z.string().trim().min(1).max(100).optional(),
      }),
      response: { status: 201, description: 'the link', schema: Link },
      errors: [...errors, 'not_found'],
      precondition: affiliateOnly,
      handler: async ({ body, auth, headers }) => {
        const link = await createLink(dataSource, { partnerId: auth.partnerId, environment: auth.environment, ...body });
        return { body: linkView(link, baseUrl(deps.publicBaseUrl, headers)) };
      },
    }),
    defineRoute({
      operationId: 'listLinks',
      method: 'get',
      path: '/api/partner/v1/links',
      scopes: ['refer'],
      tag: 'Referral',
      summary: 'Your links with their clicks, sales and commission, newest first',
      query: z.object({ currency, limit: Limit, cursor: Cursor }),
      response: {
        status: 200,
        description: 'a page of links',
        schema: z.object({ data: z.array(Link.extend({ clicks: z.number().int(), sales: z.number().int(), commission_cents: SignedCents, currency: Currency })), next_cursor: z.string().nullable() }),
      },
      errors: [...errors],
      precondition: affiliateOnly,
      handler: async ({ query, auth, headers }) => {
        const shown = await linksPage(dataSource, auth.partnerId, auth.environment, query.limit, query.cursor);
        const stats = await linkStats(dataSource, auth.partnerId, auth.environment, shown.data, query.currency);
        return { body: { data: shown.data.map((l, i) => ({ ...linkView(l, baseUrl(deps.publicBaseUrl, headers)), ...stats[i] })), next_cursor: shown.next_cursor } };
      },
    }),
    defineRoute({
      operationId: 'myClicks',
      method: 'get',
      path: '/api/partner/v1/me/clicks',
      scopes: ['report'],
      tag: 'Referral',
      summary: 'Clicks on your links, and unique clicks (one per visitor per link per UTC day)',
      query: windowQuery,
      response: { status: 200, description: 'click totals', schema: z.object({ from: z.string().nullable(), to: z.string().nullable(), clicks: z.number().int(), unique_clicks: z.number().int() }) },
      errors: [...errors],
      precondition: affiliateOnly,
      handler: async ({ query, auth, rawQuery }) => {
        const totals = await clickTotals(dataSource, auth.partnerId, auth.environment, query);
        return { body: { from: echo(rawQuery.from), to: echo(rawQuery.to), ...totals } };
      },
    }),
    defineRoute({
      operationId: 'mySales',
      method: 'get',
      path: '/api/partner/v1/me/sales',
      scopes: ['report'],
      tag: 'Referral',
      summary: 'Your referred sales in one currency, newest first (buyer masked)',
      query: z.object({ currency, limit: Limit, cursor: Cursor }),
      response: {
        status: 200,
        description: 'a page of referred sales',
        schema: z.object({
          data: z.array(
            z.object({
              sale_id: z.string(),
              order_id: z.string(),
              buyer: z.string(),
              domain: z.string(),
              amount_cents: SignedCents,
              commission_cents: SignedCents,
              commission_status: z.enum(['pending', 'accrued', 'reversed']),
              currency: Currency,
              occurred_at: z.string(),
            }),
          ),
          next_cursor: z.string().nullable(),
        }),
      },
      errors: [...errors],
      precondition: affiliateOnly,
      handler: async ({ query, auth }) => {
        return { body: page(await listSales(dataSource, auth.partnerId, auth.environment, query.currency), query.limit, query.cursor, (sale) => sale.sale_id) };
      },
    }),
    defineRoute({
      operationId: 'myCommissions',
      method: 'get',
      path: '/api/partner/v1/me/commissions',
      scopes: ['report'],
      tag: 'Referral',
      summary: 'Commission lines, oldest first, each with the running balance after it',
      description:
        '`pending`: a referred sale, while it can still be refunded (not in the balance). `accrued`: its 30-day refund window passed (enters the balance). `reversed`: the sale was refunded (a pending line voided, an accrued one taken back). `paid_out`: a payout took the amount. `balance_cents` is what is payable now; `pending_cents` what is still pending. Lines and balances are one `currency`\'s (default USD).',
      query: z.object({ currency, limit: Limit, cursor: Cursor }),
      response: {
        status: 200,
        description: 'a page of lines and the balances',
        schema: z.object({
          data: z.array(
            z.object({
              line_id: z.string(),
              kind: z.enum(['accrued', 'pending', 'paid_out', 'reversed']),
              amount_cents: SignedCents,
              balance_cents: SignedCents,
              currency: Currency,
              sale_id: z.string().optional(),
              payout_id: z.string().optional(),
              created_at: z.string(),
            }),
          ),
          next_cursor: z.string().nullable(),
          balance_cents: SignedCents,
          pending_cents: SignedCents,
          currency: Currency,
        }),
      },
      errors: [...errors],
      precondition: affiliateOnly,
      handler: async ({ query, auth }) => {
        const all = await commissionLines(dataSource, auth.partnerId, auth.environment, query.currency);
        return { body: { ...page(all.lines, query.limit, query.cursor, (line) => line.line_id), balance_cents: all.balance_cents, pending_cents: all.pending_cents, currency: query.currency } };
      },
    }),
    defineRoute({
      operationId: 'myPayouts',
      method: 'get',
      path: '/api/partner/v1/me/payouts',
      scopes: ['report'],
      tag: 'Referral',
      summary: 'Payouts of referral commission in one currency, newest first, with their lines and the total paid',
      query: z.object({ currency, limit: Limit, cursor: Cursor }),
      response: {
        status: 200,
        description: 'a page of payouts',
        schema: z.object({
          data: z.array(z.object({ payout_id: z.string(), paid_at: z.string(), amount_cents: SignedCents, currency: Currency, lines: z.array(z.object({ sale_id: z.string(), kind: z.string(), amount_cents: SignedCents, currency: Currency })) })),
          next_cursor: z.string().nullable(),
          total_paid_cents: SignedCents,
          currency: Currency,
        }),
      },
      errors: [...errors],
      precondition: affiliateOnly,
      handler: async ({ query, auth }) => {
        const all = await referralPayouts(dataSource, auth.partnerId, auth.environment, query.currency);
        return { body: { ...page(all.data, query.limit, query.cursor, (payout) => payout.payout_id), total_paid_cents: all.total_paid_cents, currency: query.currency } };
      },
    }),
    defineRoute({
      operationId: 'analytics',
      method: 'get',
      path: '/api/partner/v1/analytics',
      scopes: ['report'],
      tag: 'Referral',
      summary: 'The referral funnel: clicks, unique clicks, checkouts started, sales, conversion, GMV, commission, by day',
      description: '`conversion_rate` = sales ÷ unique clicks. `gmv_cents` and `commission_cents` leave out refunded (reversed) sales, which still count in `sales`. Counts take every currency; `gmv_cents` and `commission_cents` are one `currency`\'s (default USD). Both bounds optional (all time when absent).',
      query: windowQuery.extend({ currency }),
      response: { status: 200, description: 'the funnel', schema: z.object({ from: z.string().nullable(), to: z.string().nullable() }).passthrough() },
      errors: [...errors],
      precondition: affiliateOnly,
      handler: async ({ query, auth, rawQuery }) => {
        return { body: { from: echo(rawQuery.from), to: echo(rawQuery.to), ...(await analytics(dataSource, auth.partnerId, auth.environment, query, query.currency)) } };
      },
    }),
  ];
}
