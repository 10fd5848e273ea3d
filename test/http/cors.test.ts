import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp, type Account } from '../helpers/test-app.js';

// Pages of the configured origins may call the API from a browser (CORS_ORIGINS); by default no
// cross-origin page may. Tokens travel in a header, so no credentials are allowed.

const APP = 'https://app.example.test';
const OTHER = 'https://evil.example.test';

const preflight = (t: TestApp, url: string, origin: string, method = 'PATCH') =>
  t.app.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization,content-type',
    },
    remoteAddress: randomIp(),
  });

const allowedOrigin = (response: LightMyRequestResponse) =>
  response.headers['access-control-allow-origin'];

describe.each(backends)('cross-origin requests, CORS_ORIGINS set ($name)', (backend) => {
  let t: TestApp;
  let account: Account;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { CORS_ORIGINS: `${APP}, http://localhost:5173` } });
    account = await t.register();
  });
  afterAll(() => t.close());

  it('answers a preflight from a listed origin 204, before authentication, naming what it allows', async () => {
    const response = await preflight(t, '/api/profile', APP);
    expect(response.statusCode).toBe(204);
    expect(allowedOrigin(response)).toBe(APP);
    expect(response.headers['access-control-allow-methods']).toBe('GET, POST, PUT, PATCH, DELETE');
    expect(response.headers['access-control-allow-headers']).toBe('Authorization, Content-Type');
    expect(response.headers['access-control-max-age']).toBe('600');
    expect(response.headers['access-control-allow-credentials']).toBeUndefined();
    expect(response.headers.vary).toMatch(/Origin/);
  });

  it('does not allow an origin that is not listed', async () => {
    expect(allowedOrigin(await preflight(t, '/api/profile', OTHER))).toBeUndefined();
    const call = await t.call('GET', '/api/profile', {
      token: account.accessToken,
      headers: { origin: OTHER },
    });
    expect(call.statusCode).toBe(200);
    expect(allowedOrigin(call)).toBeUndefined();
  });

  it('lets a listed page read answers and refusals, with Retry-After and WWW-Authenticate', async () => {
    const ok = await t.call('GET', '/api/profile', {
      token: account.accessToken,
      headers: { origin: 'http://localhost:5173' },
    });
    expect(ok.statusCode).toBe(200);
    expect(allowedOrigin(ok)).toBe('http://localhost:5173');
    expect(ok.headers['access-control-expose-headers']).toBe(
      'Retry-After, WWW-Authenticate, Idempotent-Replayed, X-Request-Id',
    );
    const refused = await t.call('GET', '/api/profile', { headers: { origin: APP } });
    expect(refused.statusCode).toBe(401);
    expect(allowedOrigin(refused)).toBe(APP);
    expect(refused.headers['www-authenticate']).toBe('Bearer');
  });
});

describe.each(backends)(
  'cross-origin requests: an OPTIONS that is no preflight ($name)',
  (backend) => {
    // The Fetch standard's preflight is an OPTIONS with Origin and Access-Control-Request-Method;
    // any other OPTIONS is a request like another (a JSON 405 with Allow, or 404).
    it('answers an OPTIONS that is no preflight as any unknown method', async () => {
      const t = await TestApp.start(backend, { env: { CORS_ORIGINS: APP } });
      try {
        // Access-Control-Request-Method without Origin is no preflight either (both are needed).
        const noOrigin = { 'access-control-request-method': 'PATCH' };
        for (const headers of [{}, { origin: APP }, noOrigin] as Record<string, string>[]) {
          const known = await t.call('OPTIONS', '/api/profile', { headers });
          expect(known.statusCode).toBe(405);
          expect(known.headers.allow).toBe('DELETE, GET, HEAD, PATCH');
          const unknown = await t.call('OPTIONS', '/no/such/path', { headers });
          expect(unknown.statusCode).toBe(404);
          expect(unknown.json().error).toBe('not_found');
        }
      } finally {
        await t.close();
      }
    });
  },
);

describe.each(backends)('cross-origin requests, CORS_ORIGINS unset ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('allows no origin: a preflight is an OPTIONS like any other (405 with Allow)', async () => {
    const response = await preflight(t, '/api/profile', APP);
    expect(response.statusCode).toBe(405);
    expect(response.json().error).toBe('method_not_allowed');
    expect(allowedOrigin(response)).toBeUndefined();
    const health = await t.app.inject({ method: 'GET', url: '/healthz', headers: { origin: APP } });
    expect(allowedOrigin(health)).toBeUndefined();
  });
});

describe.each(backends)('cross-origin requests refused before routing ($name)', (backend) => {
  // A URL that is no valid percent-encoding is refused by Fastify before any hook runs: its 400
  // carries the CORS headers any other answer does, so a page can read it.
  const corsHeaders = (response: LightMyRequestResponse) =>
    Object.fromEntries(
      Object.entries(response.headers).filter(
        ([name]) => name.startsWith('access-control-') || name === 'vary',
      ),
    );

  for (const origins of [APP, '*']) {
    it(`gives a malformed URL's 400 the headers of a routed answer (CORS_ORIGINS=${origins})`, async () => {
      const t = await TestApp.start(backend, { env: { CORS_ORIGINS: origins } });
      try {
        for (const origin of [APP, OTHER, undefined]) {
          const headers: Record<string, string> = origin === undefined ? {} : { origin };
          const malformed = await t.call('GET', '/api/influencers/%zz', { headers });
          expect(malformed.statusCode).toBe(400);
          const routed = await t.call('GET', '/api/no-such-route', { headers });
          expect(routed.statusCode).toBe(404);
          expect(corsHeaders(malformed)).toEqual(corsHeaders(routed));
        }
        const listed = await t.call('GET', '/api/%zz', { headers: { origin: APP } });
        expect(allowedOrigin(listed)).toBe(origins === '*' ? '*' : APP);
      } finally {
        await t.close();
      }
    });
  }

  it('gives none without CORS_ORIGINS', async () => {
    const t = await TestApp.start(backend);
    try {
      const malformed = await t.call('GET', '/api/%zz', { headers: { origin: APP } });
      expect(malformed.statusCode).toBe(400);
      expect(corsHeaders(malformed)).toEqual({});
    } finally {
      await t.close();
    }
  });
});
