/**
 * Times every request the app answers (the API, the buyer's pages, tracking links), labelled by
 * route template: the router's matched path in OpenAPI form (`/api/partner/v1/orders/{public_id}`),
 * what a handler outside the routers names (`ctx.state.routeTemplate`, `/r/{code}`), else
 * `unmatched`; never the concrete path, so a scan of random URLs adds no series.
 */
import type Koa from 'koa';
import { httpRequestDuration } from './metrics';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The router's paths in OpenAPI form, worked out once each (as many as the routers have). */
const templates = new Map<string, string>();

/** `:name` (and any constraint after it) as `{name}`. */
export function templateOf(routerPath: string): string {
  let template = templates.get(routerPath);
  if (template === undefined) templates.set(routerPath, (template = routerPath.replace(/:([A-Za-z0-9_]+)(\([^)]*\))?/g, '{$1}')));
  return template;
}

export function requestMetrics(): Koa.Middleware<{ routeTemplate?: string }> {
  return async (ctx, next) => {
    const end = httpRequestDuration.startTimer();
    let status: number | undefined;
    try {
      await next();
    } catch (err) {
      status = (err as { status?: number }).status ?? 500;
      throw err;
    } finally {
      const matched = (ctx as unknown as { _matchedRoute?: string })._matchedRoute;
      const route = ctx.state.routeTemplate ?? (typeof matched === 'string' ? templateOf(matched) : 'unmatched');
      end({ route, method: METHODS.has(ctx.method) ? ctx.method : 'OTHER', status: String(status ?? ctx.status) });
    }
  };
}
