/** Brokerage cases for partners (spec "Brokerage", CONTRACT §10): scope broker; the list, scope report. */
import { ApiError } from '../api/errors';
import { Cursor, decodeCursor, encodeCursor, Limit, isCursorTime } from '../api/lists';
import { defineRoute, type RouteSpec } from '../api/route';
import { Cents, Currency, DomainName, z } from '../api/schemas';
import { UUID_ANY } from '../ids';
import { CASE_STATUSES } from '../../workflows/brokerage-messages';
import { checkEligibility, findCase, listCases, loadCaseView, openCase, type BrokerageDeps } from './cases';
import { publicOrigin as baseUrl } from '../api/public-origin';

const Timestamp = z.string().openapi({ format: 'date-time' });

const Outcome = z
  .object({
    result: z.enum(['acquired', 'not_acquired']),
    price_cents: Cents.optional().openapi({ description: 'the deal price (acquired only)' }),
    fee_cents: Cents.optional().openapi({ description: "the service's fee on the price: managed 15 %, self_serve 8 % (acquired only)" }),
    partner_share_cents: Cents.optional().openapi({ description: 'floor(fee_cents × your brokerage rate in bps / 10000), paid in a payout (acquired only)' }),
    reason: z.string().optional().openapi({ description: 'why the case closed (not_acquired only)' }),
    closed_at: Timestamp,
  })
  .openapi('BrokerageOutcome');

const Case = z
  .object({
    case_id: z.string(),
    domain: z.string(),
    tier: z.enum(['managed', 'self_serve']),
    status: z.enum(CASE_STATUSES),
    buyer_email: z.string(),
    budget_cents: Cents,
    currency: Currency,
    price_cents: Cents.nullable().openapi({ description: 'the agreed price, from `agreed` on' }),
    progress_url: z.string().openapi({ format: 'uri', description: "the buyer's no-login progress page (signed link; operators can revoke it)" }),
    created_at: Timestamp,
    updated_at: Timestamp,
    timeline: z.array(z.object({ status: z.enum(CASE_STATUSES), at: Timestamp, detail: z.string().optional() })),
    outcome: Outcome.nullable().openapi({ description: 'present once the case is `completed` (acquired) or `closed` (not acquired)' }),
  })
  .openapi('BrokerageCase');

/** A brokerage event's data (brokerage.*): the case at that step (src/brokerage/cases.ts, caseEventData). */
export const BrokerageEventData = z
  .object({
    case_id: z.string(),
    domain: z.string(),
    tier: z.enum(['managed', 'self_serve']),
    status: z.enum(CASE_STATUSES),
    at: Timestamp,
    detail: z.string().nullable(),
    price_cents: Cents.nullable(),
    currency: Currency,
    outcome: Outcome.nullable(),
  })
  .openapi('BrokerageEventData');

const invalidCursor = () => new ApiError('validation_error', 'cursor is not one this API gave out', [{ field: 'query.cursor', issue: 'invalid' }]);

export function brokerageRoutes(deps: BrokerageDeps): RouteSpec[] {
  const { dataSource } = deps;
  return [
    defineRoute({
      operationId: 'getBrokerageEligibility',
      method: 'get',
      path: '/api/partner/v1/brokerage/eligibility',
      scopes: ['broker'],
      tag: 'Brokerage',
      summary: 'Whether a name can be brokered',
      description:
        'A name is ineligible while it runs an active site (`active_site`: the inventory says so; outside the inventory, in sandbox, names starting `live-` or `site-`) or already has an open case in this environment (`in_case`).',
      query: z.object({ domain: DomainName }),
      response: {
        status: 200,
        description: 'the verdict',
        schema: z.object({ domain: z.string(), eligible: z.boolean(), reason: z.enum(['active_site', 'in_case']).nullable() }).openapi('BrokerageEligibility'),
      },
      errors: ['validation_error'],
      handler: async ({ query, auth }) => ({ body: await checkEligibility(dataSource, auth.environment, query.domain) }),
    }),
    defineRoute({
      operationId: 'openBrokerageCase',
      method: 'post',
      path: '/api/partner/v1/brokerage',
      scopes: ['broker'],
      tag: 'Brokerage',
      summary: 'Open an acquisition case for a buyer',
      description:
        'The case runs as a workflow that operators move through its statuses (docs/partners/brokerage.md); every status change is a `brokerage.*` event. Give the buyer `progress_url`: a no-login page with the status and timeline. An ineligible name is 422 `domain_not_eligible` with the reason in the message and in `details`. A partner holds at most its quota of open cases per environment (100 in sandbox, 10,000 in live unless raised): beyond it 429 `quota_exceeded` with `Retry-After: 3600`.',
      body: z.object({
        domain: DomainName,
        tier: z.enum(['managed', 'self_serve']),
        buyer_email: z.string().trim().max(254).email(),
        budget_cents: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
      }),
      response: { status: 201, description: 'the case', schema: Case },
      errors: ['validation_error', 'domain_not_eligible', 'quota_exceeded'],
      handler: async ({ body, auth, headers }) => {
        const opened = await openCase(deps, {
          partnerId: auth.partnerId,
          environment: auth.environment,
          domain: body.domain,
          tier: body.tier,
          buyerEmail: body.buyer_email,
          budgetCents: body.budget_cents,
        });
        return { body: await loadCaseView(dataSource.manager, deps.progressToken, opened, baseUrl(deps.publicBaseUrl, headers)) };
      },
    }),
    defineRoute({
      operationId: 'getBrokerageCase',
      method: 'get',
      path: '/api/partner/v1/brokerage/{case_id}',
      scopes: ['broker'],
      tag: 'Brokerage',
      summary: 'One of your cases with its timeline and, once closed, its outcome',
      params: z.object({ case_id: z.string().min(1).max(100) }),
      response: { status: 200, description: 'the case', schema: Case },
      errors: ['not_found'],
      handler: async ({ params, auth, headers }) => {
        const c = await findCase(dataSource.manager, params.case_id);
        if (!c || c.partnerId !== auth.partnerId || c.environment !== auth.environment) throw new ApiError('not_found', `no brokerage case ${params.case_id}`);
        return { body: await loadCaseView(dataSource.manager, deps.progressToken, c, baseUrl(deps.publicBaseUrl, headers)) };
      },
    }),
    defineRoute({
      operationId: 'listBrokerageCases',
      method: 'get',
      path: '/api/partner/v1/brokerage',
      scopes: ['report'],
      tag: 'Brokerage',
      summary: 'Your cases with their outcomes, newest first',
      query: z.object({ limit: Limit, cursor: Cursor }),
      response: { status: 200, description: 'a page of cases', schema: z.object({ data: z.array(Case), next_cursor: z.string().nullable() }).openapi('BrokerageCaseList') },
      errors: ['validation_error'],
      handler: async ({ query, auth, headers }) => {
        const cursor = query.cursor ? decodeCursor<{ c: string; i: string }>(query.cursor, ['c', 'i']) : undefined;
        if (query.cursor && (!cursor || !isCursorTime(cursor.c) || !UUID_ANY.test(cursor.i))) throw invalidCursor();
        const page = await listCases(deps, auth.partnerId, auth.environment, { limit: query.limit, cursor: cursor ? { createdAt: cursor.c, id: cursor.i } : undefined }, baseUrl(deps.publicBaseUrl, headers));
        return { body: { data: page.data, next_cursor: page.next ? encodeCursor({ c: page.next.createdAt, i: page.next.id }) : null } };
      },
    }),
  ];
}
