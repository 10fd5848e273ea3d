import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/accounts/caller.js';
import { Errors } from '../../src/errors.js';
import { authenticate } from '../../src/http/authenticate.js';
import { errorHandler } from '../../src/http/error-handler.js';
import { databaseOutageLog } from '../../src/db/outage.js';
import { backends } from '../helpers/backends.js';
import { apiRouteTable } from '../helpers/route-table.js';
import { TestApp, type Account } from '../helpers/test-app.js';

const ROUTES = await apiRouteTable();
const concrete = (url: string) => url.replace(/:[a-z_]+/g, '00000000-0000-4000-8000-000000000000');

describe('the route table', () => {
  it('lists the API (a sanity check that the walk below sees every group)', () => {
    const urls = new Set(ROUTES.map((r) => r.url));
    expect(urls).toContain('/api/change-password');
    expect(urls).toContain('/api/profile');
  });

  it.each(ROUTES.map((r) => [`${r.method} ${r.url}`, r] as const))(
    '%s declares who may call it (config.access)',
    (_name, route) => {
      expect(['bearer', 'optional', 'public', 'socket']).toContain(route.access);
    },
  );
});

describe.each(backends)('fail-closed authentication ($name)', (backend) => {
  let t: TestApp;
  let account: Account;
  beforeAll(async () => {
    t = await TestApp.start(backend);
    account = await t.register();
  });
  afterAll(() => t.close());

  // A `socket` route refuses with close codes on its socket (test/chat/realtime/).
  const guarded = ROUTES.filter((r) => r.access !== 'public' && r.access !== 'socket');

  it.each(guarded.map((r) => [`${r.method} ${r.url}`, r] as const))(
    '%s answers 401 to a bad token (and to none unless optional)',
    async (_name, route) => {
      const url = concrete(route.url);
      const method = route.method as 'GET';
      const forged = `${account.accessToken.slice(0, -4)}AAAA`;
      const bad = await t.call(method, url, { token: forged, body: {} });
      expect(bad.statusCode).toBe(401);
      expect(bad.headers['www-authenticate']).toBe('Bearer');
      expect(bad.json()).toMatchObject({ error: 'unauthorized' });
      const none = await t.call(method, url, { body: {} });
      if (route.access === 'bearer') expect(none.statusCode).toBe(401);
      else expect(none.statusCode).not.toBe(401);
    },
  );
});

describe('the authentication hook', () => {
  async function appWith(
    routes: (app: FastifyInstance) => void,
    anonymous: string[] = [],
  ): Promise<FastifyInstance> {
    const app = Fastify();
    app.addHook(
      'onRequest',
      authenticate({
        verify: async (token) => {
          if (token !== 'good') throw Errors.unauthorized();
          return { userId: 'u', sessionId: 's' } as Caller;
        },
        takeAnonymousRequest: async (ip) => void anonymous.push(ip),
      }),
    );
    app.setErrorHandler(errorHandler(databaseOutageLog(app.log, Date.now)));
    routes(app);
    await app.ready();
    return app;
  }

  it('guards a route that declares nothing, and leaves non-API routes alone', async () => {
    const app = await appWith((a) => {
      a.get('/api/undeclared', async (request) => ({ caller: request.caller?.userId }));
      a.get('/status', async () => ({ ok: true }));
    });
    expect((await app.inject({ url: '/api/undeclared' })).statusCode).toBe(401);
    const ok = await app.inject({
      url: '/api/undeclared',
      headers: { authorization: 'Bearer good' },
    });
    expect(ok.json()).toEqual({ caller: 'u' });
    expect((await app.inject({ url: '/status' })).statusCode).toBe(200);
    await app.close();
  });

  it('counts a request without a valid token against the anonymous budget, and none with one', async () => {
    const anonymous: string[] = [];
    const app = await appWith((a) => {
      a.get('/api/guarded', async () => ({}));
      a.get('/api/maybe', { config: { access: 'optional' } }, async () => ({}));
    }, anonymous);
    const call = (url: string, token?: string) =>
      app.inject({ url, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    expect((await call('/api/guarded')).statusCode).toBe(401);
    expect((await call('/api/guarded', 'forged')).statusCode).toBe(401);
    expect((await call('/api/maybe', 'forged')).statusCode).toBe(401);
    expect(anonymous).toHaveLength(3);
    expect((await call('/api/guarded', 'good')).statusCode).toBe(200);
    expect((await call('/api/maybe', 'good')).statusCode).toBe(200);
    expect(anonymous).toHaveLength(3);
    await app.close();
  });

  it('looks at nothing on a socket route: no token check, no anonymous budget', async () => {
    const anonymous: string[] = [];
    const app = await appWith((a) => {
      a.get('/api/socket', { config: { access: 'socket' } }, async (r) => ({
        c: r.caller ?? null,
      }));
      a.get('/api/open', { config: { access: 'public' } }, async () => ({}));
    }, anonymous);
    const forged = await app.inject({
      url: '/api/socket',
      headers: { authorization: 'Bearer forged' },
    });
    expect(forged.json()).toEqual({ c: null });
    expect((await app.inject({ url: '/api/socket' })).statusCode).toBe(200);
    expect(anonymous).toEqual([]);
    await app.inject({ url: '/api/open' });
    expect(anonymous).toHaveLength(1);
    await app.close();
  });
});
