import { isApiPath } from '../../src/http/authenticate.js';
import type { RouteEntry } from '../../src/http/route-table.js';
import { withThrowawayApp } from '../../scripts/throwaway-app.js';

/**
 * The `/api` routes of the app as Fastify registered them (from a throw-away SQLite instance), so
 * tests that must cover every route take their list from the app rather than a hand-kept one.
 */
export async function apiRouteTable(): Promise<readonly RouteEntry[]> {
  const routes = await withThrowawayApp(async (app) => app.routeTable());
  return routes.filter((route) => isApiPath(route.url) && route.method !== 'HEAD');
}
