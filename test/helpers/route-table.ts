import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { isApiPath } from '../../src/http/authenticate.js';
import type { RouteEntry } from '../../src/http/route-table.js';

/**
 * The `/api` routes of the app as Fastify registered them (from a throw-away SQLite instance), so
 * tests that must cover every route take their list from the app rather than a hand-kept one.
 */
export async function apiRouteTable(): Promise<readonly RouteEntry[]> {
  const dir = mkdtempSync(join(tmpdir(), 'account-service-routes-'));
  try {
    const app = await buildApp(
      loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'auth.db')}`, LOG_LEVEL: 'silent' }),
      { consoleMail: () => undefined },
    );
    await app.ready();
    const routes = app.routeTable().filter((route) => isApiPath(route.url));
    await app.close();
    return routes.filter((route) => route.method !== 'HEAD');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
