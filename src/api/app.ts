/**
 * createApp(deps): the Koa application with every middleware composed in one visible order.
 * It never listens; main/api.ts does, and tests drive it over a real socket.
 */
import type { RouterMiddleware } from '@koa/router';
import Koa from 'koa';
import { logAnswerErrors } from './answer-errors';
import compose from 'koa-compose';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { Config } from '../config';
import type { CredentialService } from '../auth/credentials';
import type { BrokerageDeps } from '../brokerage/cases';
import { ProgressLinkToken } from '../brokerage/progress-token';
import { BrokerageEventData, brokerageRoutes } from '../brokerage/routes';
import { checkoutRoutes } from '../checkout/routes';
import { CheckoutPageToken } from '../checkout/page-token';
import { SandboxCardProcessor, type PaymentPort } from '../checkout/payments';
import type { StripeCheckout } from '../checkout/stripe';
import { stripeWebhooks } from '../checkout/stripe-events';
import type { CheckoutDeps } from '../checkout/sessions';
import { discoveryRoutes } from '../discovery/routes';
import { timedSearch, watchPool } from '../metrics/metrics';
import { requestMetrics } from '../metrics/http';
import { financeRoutes } from '../finance/routes';
import { referralRoutes } from '../referral/routes';
import { brokeragePages } from '../pages/brokerage-pages';
import { docsPages } from '../pages/docs-pages';
import { sandboxRoutes } from '../sandbox/routes';
import { checkoutPages } from '../pages/checkout-pages';
import { linkRedirect, referralPages } from '../pages/referral-pages';
import { AttributionKeys } from '../referral/attribution';
import { ClickRecorder } from '../referral/clicks';
import type { QuoteTokenSigner } from '../orders/quote-token';
import { OrderDisputeEventData, OrderEventData, OrderRefundedEventData, orderRoutes } from '../orders/routes';
import type { WorkflowStarter } from '../temporal/start';
import type { SecretBox } from '../auth/secret-box';
import { webhookRoutes } from '../webhooks/routes';
import type { DomainSearch } from '../discovery/search';
import { AdmissionBatcher, type Admission } from '../auth/admission';
import type { ListingReader } from '../discovery/listing-cache';
import { authenticate, requireKeyId } from './middleware/authenticate';
import { errorMapping } from './middleware/errors';
import { rawBody } from './middleware/raw-body';
import { requestContext } from './middleware/request-id';
import { validate, type ValidatedInput } from './middleware/validate';
import { buildOpenApiDocument, type PublicRoute, type WebhookSpec } from './openapi';
import { EVENT_DESCRIPTIONS } from '../events/catalog';
import { RESPONSE_EXAMPLES } from './examples';
import type { EventType } from '../events/outbox';
import { readiness } from './readiness';
import { toRouterPath, type RouteSpec } from './route';
import { ResourceRouters } from './resource-routers';
import type { AppState } from './state';
import { PageLimits } from '../pages/limits';
import { renderPage } from '../pages/render';
import { partnerPages } from '../pages/partner-pages';
import { onboardingRoutes } from '../partners/routes';
import { OnboardingLinkToken } from '../partners/onboarding-links';

export interface AppDeps {
  config: Pick<Config, 'rateLimits' | 'http' | 'webhooks' | 'quotas' | 'pageLimits'>;
  dataSource: DataSource;
  credentials: CredentialService;
  /** Seals and opens webhook secrets. */
  secretBox: SecretBox;
  search: DomainSearch;
  workflows: WorkflowStarter;
  quoteSigner: QuoteTokenSigner;
  logger: Logger;
  /** Resolves when Temporal answers; rejects otherwise. */
  temporalReady: () => Promise<void>;
  now?: () => number;
  /** Where referral clicks are queued; one is made when not given (the API entry point passes one it flushes on stop). */
  clickRecorder?: ClickRecorder;
  /** Admission of signed requests; Postgres (AdmissionBatcher) unless given (Redis, src/main/services.ts). */
  admission?: Admission;
  /** Where availability and pricing read listings when admission did not; Postgres unless given. */
  listings?: ListingReader;
  /** Limits per client address on the public pages; in this process unless given (Redis: src/main/services.ts). */
  pageLimits?: PageLimits;
  /** Card processors per environment (hosted checkout); sandbox's simulator unless given. */
  payments?: Partial<Record<'sandbox' | 'live', PaymentPort>>;
  /** Live checkout on the processor's own page (Stripe), when configured: the service never sees a card. */
  hosted?: { live?: StripeCheckout };
  /** Sees each route's answer (the test suite records the reference's examples with it: src/api/examples.ts). */
  onAnswer?: (operationId: string, status: number, body: unknown) => void;
}

/** What hosted checkout needs, from the app's dependencies. */
export function checkoutDeps(deps: AppDeps): CheckoutDeps {
  return {
    dataSource: deps.dataSource,
    workflows: deps.workflows,
    pageToken: new CheckoutPageToken(deps.secretBox.deriveKeys('checkout-page-token')),
    payments: deps.payments ?? { sandbox: new SandboxCardProcessor(deps.dataSource) },
    hosted: deps.hosted ?? {},
  };
}

/** What brokerage needs, from the app's dependencies. */
export function brokerageDeps(deps: AppDeps): BrokerageDeps {
  return {
    dataSource: deps.dataSource,
    workflows: deps.workflows,
    progressToken: new ProgressLinkToken(deps.secretBox.deriveKeys('brokerage-progress-token')),
    publicBaseUrl: deps.config.http.publicBaseUrl,
    quotas: deps.config.quotas,
  };
}

const API_PREFIX = '/api/';
/** Health probes are no pages: never limited. */
const PROBES = new Set(['/healthz', '/readyz']);
export const OPENAPI_PATH = '/api/partner/v1/openapi.json';
export const QUOTE_KEYS_PATH = '/api/partner/v1/quote-keys';

const PUBLIC_ROUTES: PublicRoute[] = [
  { method: 'get', path: '/healthz', summary: 'The process is up', tag: 'Operations' },
  { method: 'get', path: '/readyz', summary: 'Postgres, Temporal and (when admission is in Redis) Redis are reachable (else 503); the search process is reported too (while it is down: 200, status "degraded")', tag: 'Operations' },
  { method: 'get', path: OPENAPI_PATH, summary: 'This OpenAPI 3.1 document', tag: 'Operations' },
  { method: 'get', path: QUOTE_KEYS_PATH, summary: 'Public keys (JWKS) that verify quote tokens offline', tag: 'Orders' },
];

/** Every signed route of the API, one table; each declares its scope and schemas. */
export function partnerRoutes(deps: AppDeps): RouteSpec[] {
  return [
    ...discoveryRoutes({ ...deps, search: timedSearch(deps.search) }),
    ...orderRoutes(deps),
    ...checkoutRoutes({ ...checkoutDeps(deps), publicBaseUrl: deps.config.http.publicBaseUrl }),
    ...brokerageRoutes(brokerageDeps(deps)),
    ...financeRoutes(deps),
    ...referralRoutes({ dataSource: deps.dataSource, publicBaseUrl: deps.config.http.publicBaseUrl }),
    ...webhookRoutes(deps),
    ...sandboxRoutes(deps),
    ...onboardingRoutes(deps),
  ];
}

/** Runs a route's precondition (after the scope, before validation) and keeps its answer for the handler. */
function precondition(check: NonNullable<RouteSpec['precondition']>): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    ctx.state.checked = await check(ctx.state.auth!);
    await next();
  };
}

/** The OpenAPI `webhooks` section: every event type with its payload's schema. */
function eventWebhooks(): WebhookSpec[] {
  return (Object.entries(EVENT_DESCRIPTIONS) as Array<[EventType, string]>).map(([type, description]) => ({
    type,
    description,
    data: type === 'order.refunded' ? OrderRefundedEventData : type.startsWith('order.dispute_') ? OrderDisputeEventData : type.startsWith('brokerage.') ? BrokerageEventData : OrderEventData,
  }));
}

/** `routes` defaults to the partner API's table; tests may mount others on the same middleware. */
export function createApp(deps: AppDeps, routes: RouteSpec[] = partnerRoutes(deps)): Koa<AppState> {
  // Behind a proxy (TRUST_PROXY), the client's address and https come from its X-Forwarded-* headers:
  // visitor hashes and Secure cookies depend on them.
  const app = new Koa<AppState>({ proxy: deps.config.http.trustProxy ?? false, maxIpsCount: 1 });
  logAnswerErrors(app, (err, clientGone) => (clientGone ? deps.logger.debug({ err }, 'a client went away before its answer was written') : deps.logger.error({ err }, 'an answer failed outside the error mapping')));
  const openapi = buildOpenApiDocument(routes, PUBLIC_ROUTES, deps.config.http.publicBaseUrl, eventWebhooks(), RESPONSE_EXAMPLES);
  const router = new ResourceRouters<AppState>();
  const auth = { ...deps, admission: deps.admission ?? new AdmissionBatcher(deps.dataSource) };

  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', readiness(deps));
  router.get(OPENAPI_PATH, (ctx) => {
    ctx.body = openapi;
  });
  router.get(QUOTE_KEYS_PATH, async (ctx) => {
    ctx.body = { keys: [await deps.quoteSigner.publicJwk()] };
  });

  for (const route of routes) {
    router.register(toRouterPath(route.path), [route.method.toUpperCase()], [
      requireKeyId(deps.credentials),
      rawBody(),
      authenticate(auth, route.scopes, route.admittedRead),
      ...(route.precondition ? [precondition(route.precondition)] : []),
      validate(route),
      async (ctx: Koa.ParameterizedContext<AppState>) => {
        const input = (ctx.state as AppState & { input: ValidatedInput }).input;
        const result = await route.handler({
          checked: ctx.state.checked,
          query: input.query as never,
          params: input.params as never,
          body: input.body,
          auth: ctx.state.auth!,
          headers: ctx.headers,
          rawQuery: input.rawQuery,
          requestId: ctx.state.requestId,
          admittedRead: ctx.state.admittedRead,
        });
        ctx.status = result.status ?? route.response.status;
        for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
        ctx.body = result.body;
        deps.onAnswer?.(route.operationId, ctx.status, result.body);
      },
    ] as RouterMiddleware<AppState>[]);
  }

  const attribution = new AttributionKeys(deps.secretBox.deriveKeys('referral-attribution'));
  const clicks = deps.clickRecorder ?? new ClickRecorder(deps.dataSource, deps.logger);
  const limits = deps.pageLimits ?? new PageLimits(deps.config.pageLimits);
  // Tracking links first: their redirect is the hot path and needs nothing below.
  // Every answer timed by route template (the operators' metrics, src/metrics/).
  app.use(requestMetrics());
  watchPool(deps.dataSource);
  app.use(linkRedirect({ dataSource: deps.dataSource, attribution, clicks, logger: deps.logger, limits }));
  app.use(requestContext(deps.logger));
  // The card processor's signed events (live checkout), outside the buyers' per-address page limits.
  if (deps.hosted?.live) app.use(stripeWebhooks(checkoutDeps(deps), deps.hosted.live, deps.logger).routes());
  // The buyer's pages answer HTML, with their own security headers and error pages. None lives
  // under the API's prefix, so API requests skip their routers' path matching.
  // Page requests per client address (CONTRACT §15): beyond, a 429 page with Retry-After.
  const limitedPages: Koa.Middleware<AppState> = async (ctx, next) => {
    const verdict = await limits.page(ctx.ip);
    if (!verdict.allowed) {
      ctx.set('Retry-After', String(verdict.retryAfterSeconds));
      return renderPage(ctx, 'message', { title: 'Too many requests', text: `Too many pages were asked from your address. Try again in ${verdict.retryAfterSeconds} seconds.` }, 429);
    }
    return pages(ctx, next);
  };
  const pages = compose<Koa.ParameterizedContext<AppState>>([
    checkoutPages({ ...checkoutDeps(deps), publicBaseUrl: deps.config.http.publicBaseUrl }, deps.logger, limits, attribution).routes(),
    referralPages({
      dataSource: deps.dataSource,
      checkout: checkoutDeps(deps),
      search: timedSearch(deps.search),
      attribution,
      clicks,
      publicBaseUrl: deps.config.http.publicBaseUrl,
      limits,
    }, deps.logger).routes(),
    brokeragePages(brokerageDeps(deps), deps.logger).routes(),
    partnerPages(
      {
        dataSource: deps.dataSource,
        credentials: deps.credentials,
        workflows: deps.workflows,
        onboardingLinks: OnboardingLinkToken.of(deps.secretBox),
        publicBaseUrl: deps.config.http.publicBaseUrl,
      },
      deps.logger,
      limits,
    ).routes(),
    docsPages(deps.logger, OPENAPI_PATH).routes(),
  ] as Koa.Middleware<AppState>[]);
  // Partner answers (orders, buyers' emails, money) are never kept by a cache on the way, errors
  // included; nor is what a path no page has answers (the API's 404).
  const noStore = (ctx: Koa.ParameterizedContext<AppState>, next: Koa.Next) => {
    ctx.set('Cache-Control', 'no-store');
    return next();
  };
  app.use((ctx, next) => (ctx.path.startsWith(API_PREFIX) || PROBES.has(ctx.path) ? noStore(ctx, next) : limitedPages(ctx, () => noStore(ctx, next))));
  app.use(errorMapping(deps.config.http.publicBaseUrl));
  // Then, for a known path called with a method it lacks: 405 with Allow (errorMapping gives it the error body).
  app.use(router.routes());
  return app;
}
