/** Hosted checkout sessions for partners (spec "Hosted checkout", CONTRACT §9), scope embed. */
import { ApiError } from '../api/errors';
import { defineRoute, type RouteSpec } from '../api/route';
import { Cents, Currency, DomainName, z } from '../api/schemas';
import type { Environment } from '../config';
import { findSession, openSession, sessionView, type CheckoutDeps } from './sessions';
import { publicOrigin as baseUrl } from '../api/public-origin';

const MAX_URL = 2048;

/** A return URL: absolute http(s) without credentials; https for live credentials. */
const ReturnUrl = z
  .string()
  .max(MAX_URL)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'https:' || url.protocol === 'http:') && !url.username && !url.password;
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL without credentials')
  .openapi({ format: 'uri' });

const Session = z
  .object({
    session_id: z.string(),
    checkout_url: z.string().openapi({ format: 'uri', description: 'the hosted page; its query carries the signed token `pt`' }),
    domain: z.string(),
    price_cents: Cents,
    currency: Currency,
    status: z.enum(['open', 'complete', 'expired']),
    expires_at: z.string().openapi({ format: 'date-time' }),
    created_at: z.string().openapi({ format: 'date-time' }),
    order_id: z.string().nullable().openapi({ description: 'the order the payment recorded, once `complete`' }),
    success_url: z.string().nullable(),
    cancel_url: z.string().nullable(),
    customer_email: z.string().nullable(),
    client_reference_id: z.string().nullable(),
  })
  .openapi('CheckoutSession');

function requireHttpsInLive(environment: Environment, fields: Record<string, string | undefined>): void {
  if (environment !== 'live') return;
  const problems = Object.entries(fields)
    .filter(([, v]) => v && !v.startsWith('https:'))
    .map(([field]) => ({ field: `body.${field}`, issue: 'must be https for live credentials' }));
  if (problems.length) throw new ApiError('validation_error', problems.map((p) => `${p.field} ${p.issue}`).join('; '), problems);
}

export function checkoutRoutes(deps: CheckoutDeps & { publicBaseUrl?: string }): RouteSpec[] {
  return [
    defineRoute({
      operationId: 'createCheckoutSession',
      method: 'post',
      path: '/api/partner/v1/checkout-session',
      scopes: ['embed'],
      tag: 'Checkout',
      summary: 'Open a hosted checkout for a listed domain',
      description:
        'Redirect the buyer to `checkout_url`. The session is open for 7 days; opening it reserves nothing, paying does (a name sold meanwhile shows the buyer a clear page and charges nothing). After payment the buyer lands on `success_url` with `session_id` and `order_id` added to its query, or on a receipt page; `cancel_url` is where "Cancel" leads. The sale is an order with `payment_model: "service_collected"` that keeps `client_reference_id`.',
      body: z.object({
        domain: DomainName,
        success_url: ReturnUrl.optional(),
        cancel_url: ReturnUrl.optional(),
        customer_email: z.string().trim().max(254).email().optional(),
        client_reference_id: z.string().trim().min(1).max(200).optional().openapi({ description: 'your own reference, kept on the session and the order' }),
      }),
      response: { status: 201, description: 'the open session', schema: Session },
      errors: ['validation_error', 'not_found', 'conflict', 'service_unavailable'],
      handler: async ({ body, auth, headers }) => {
        requireHttpsInLive(auth.environment, { success_url: body.success_url, cancel_url: body.cancel_url });
        const session = await openSession(deps, {
          partnerId: auth.partnerId,
          environment: auth.environment,
          domain: body.domain,
          successUrl: body.success_url,
          cancelUrl: body.cancel_url,
          customerEmail: body.customer_email,
          clientReferenceId: body.client_reference_id,
        });
        return { body: await sessionView(deps, session, baseUrl(deps.publicBaseUrl, headers)) };
      },
    }),
    defineRoute({
      operationId: 'getCheckoutSession',
      method: 'get',
      path: '/api/partner/v1/checkout-session/{session_id}',
      scopes: ['embed'],
      tag: 'Checkout',
      summary: 'One of your checkout sessions: open, complete (with order_id) or expired',
      params: z.object({ session_id: z.string().min(1).max(100) }),
      response: { status: 200, description: 'the session', schema: Session },
      errors: ['not_found'],
      handler: async ({ params, auth, headers }) => {
        const session = await findSession(deps.dataSource, params.session_id);
        if (!session || session.partnerId !== auth.partnerId || session.environment !== auth.environment) throw new ApiError('not_found', `no checkout session ${params.session_id}`);
        return { body: await sessionView(deps, session, baseUrl(deps.publicBaseUrl, headers)) };
      },
    }),
  ];
}
