/**
 * The API's routes in one @koa/router per resource: the first path segment under
 * /api/partner/v1/ (`orders` for /api/partner/v1/orders/{public_id}); every other path in one
 * router more. @koa/router tests every route's pattern against each request and builds its chain,
 * so with one router each signed request was tested against all 33 routes (the router was 4.9 %
 * of the API's CPU under signed load, 3.2 % after this: bench/RESULTS.md, 2026-12-04); here
 * against its resource's few.
 *
 * What a request meets is unchanged: paths match case-insensitively and with or without a
 * trailing slash, as the router matches them, and a known path with a method it lacks gets the
 * router's answer from the same router that holds it (405 with Allow; for a method outside the
 * router's list its 501, which the error mapping answers as 405 or 404).
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
  /** '' (the paths outside /api/partner/v1/, and the fallback) always has one: its allowedMethods answers any path no resource has. */
  private readonly routers = new Map<string, Router<S>>([['', new Router<S>()]]);

  /** As Router.register: `path` in the router's form (`/orders/:public_id`). */
  register(path: string, methods: string[], middleware: RouterMiddleware<S>[]): void {
    const resource = resourceOf(path);
    // A request's resource is read from its path, so a route's must be written out in full.
    if (/[:*(]/.test(resource)) throw new Error(`${path}: the first segment under ${PREFIX} must be fixed`);
    let router = this.routers.get(resource);
    if (!router) this.routers.set(resource, (router = new Router<S>()));
    router.register(path, methods, middleware);
  }

  get(path: string, middleware: RouterMiddleware<S>): void {
    this.register(path, ['GET'], [middleware]);
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
    const others = byResource.get('')!;
    const dispatch: Koa.Middleware<S> = (ctx, next) => (byResource.get(resourceOf(ctx.path)) ?? others)(ctx, next);
    // With tracing on, OpenTelemetry's Koa instrumentation finds a router's routes through the
    // `router` of what app.use is given (as @koa/router's own dispatch carries it) and times each
    // route's middleware in a span named after its path: every resource's routes, as one router's.
    return Object.assign(dispatch, { router: { stack: [...this.routers.values()].flatMap((router) => router.stack) } });
  }
}
