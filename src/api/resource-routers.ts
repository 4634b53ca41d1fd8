/**
 * The API's routes in one @koa/router per resource: the first path segment under
 * /api/partner/v1/ (`orders` for /api/partner/v1/orders/{public_id}); every other path in one
 * router more. @koa/router tests every route's pattern against each request, so with one router
 * each signed request paid for all ~60 of them (about 2 µs, bench/RESULTS.md); here it is tested
 * against its resource's few.
 *
 * What a request meets is unchanged: paths match case-insensitively and with or without a
 * trailing slash, as the router matches them, and a known path with a method it lacks gets the
 * router's 405 with Allow (501 for a method no route has), from the same router that holds it.
 */
import Router, { type RouterMiddleware } from '@koa/router';
import type Koa from 'koa';

const PREFIX = '/api/partner/v1/';

/** The resource of a path, lower case; '' for a path outside /api/partner/v1/. */
export function resourceOf(path: string): string {
  if (path.length <= PREFIX.length || path.slice(0, PREFIX.length).toLowerCase() !== PREFIX) return '';
  const end = path.indexOf('/', PREFIX.length);
  return path.slice(PREFIX.length, end === -1 ? undefined : end).toLowerCase();
}

export class ResourceRouters<S> {
  private readonly routers = new Map<string, Router<S>>();

  /** As Router.register: `path` in the router's form (`/orders/:public_id`). */
  register(path: string, methods: string[], middleware: RouterMiddleware<S>[]): void {
    const resource = resourceOf(path);
    // A request's resource is read from its path, so a route's must be written out.
    if (resource.startsWith(':')) throw new Error(`${path}: the first segment under ${PREFIX} must be fixed`);
    let router = this.routers.get(resource);
    if (!router) this.routers.set(resource, (router = new Router<S>()));
    router.register(path, methods, middleware);
  }

  /** The routers' routes, then their allowedMethods (405, 501, OPTIONS), as app.use(router.routes()) and app.use(router.allowedMethods()) would. */
  routes(): Koa.Middleware<S> {
    const byResource = new Map<string, Koa.Middleware<S>>();
    for (const [resource, router] of this.routers) {
      const routes = router.routes() as unknown as Koa.Middleware<S>;
      const allowed = router.allowedMethods() as unknown as Koa.Middleware<S>;
      byResource.set(resource, (ctx, next) => routes(ctx, () => allowed(ctx, next)));
    }
    // Under the prefix, a resource no route has: the other paths' router finds nothing, as the one router did.
    const others = byResource.get('') ?? ((_ctx, next) => next());
    const dispatch: Koa.Middleware<S> = (ctx, next) => (byResource.get(resourceOf(ctx.path)) ?? others)(ctx, next);
    // With tracing on, OpenTelemetry's Koa instrumentation finds a router's routes through the
    // `router` of what app.use is given (as @koa/router's own dispatch carries it) and times each
    // route's middleware in a span named after its path: every resource's routes, as one router's.
    return Object.assign(dispatch, { router: { stack: [...this.routers.values()].flatMap((router) => router.stack) } });
  }
}
