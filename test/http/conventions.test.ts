import { gzipSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

const WITH_DETAILS = ['validation_failed', 'weak_password'];

/** API.md: every error is `{message, error, details?}` as JSON; details only where listed. */
function expectError(response: LightMyRequestResponse, status: number, code: string) {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  const body = response.json();
  expect(typeof body.message).toBe('string');
  expect(body.message.length).toBeGreaterThan(0);
  expect(body.error).toBe(code);
  if (WITH_DETAILS.includes(code)) {
    expect(Array.isArray(body.details)).toBe(true);
    for (const detail of body.details) {
      expect(typeof detail.field).toBe('string');
      expect(typeof detail.message).toBe('string');
    }
  } else {
    expect(body).not.toHaveProperty('details');
  }
  return body as { message: string; error: string; details?: { field: string }[] };
}

const fieldsOf = (body: { details?: { field: string }[] }) =>
  (body.details ?? []).map((d) => d.field);

describe.each(backends)('HTTP conventions ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const raw = (url: string, payload: string | Buffer, contentType: string, method = 'POST') =>
    t.app.inject({
      method: method as 'POST',
      url,
      payload,
      headers: { 'content-type': contentType },
      remoteAddress: randomIp(),
    });

  describe('request bodies', () => {
    it('a body sent with another Content-Type gets 415 unsupported_media_type', async () => {
      const body = JSON.stringify({ email: uniqueEmail(), password: STRONG_PASSWORD });
      expectError(await raw('/api/login', body, 'text/plain'), 415, 'unsupported_media_type');
      expectError(
        await raw('/api/login', 'email=a%40b.test', 'application/x-www-form-urlencoded'),
        415,
        'unsupported_media_type',
      );
    });

    it('a compressed body (Content-Encoding) gets 415 unsupported_media_type naming the coding accepted', async () => {
      const body = gzipSync(JSON.stringify({ email: uniqueEmail(), password: STRONG_PASSWORD }));
      for (const coding of ['gzip', 'br', 'GZIP, identity']) {
        const response = await t.app.inject({
          method: 'POST',
          url: '/api/login',
          payload: body,
          headers: { 'content-type': 'application/json', 'content-encoding': coding },
          remoteAddress: randomIp(),
        });
        expectError(response, 415, 'unsupported_media_type');
        expect(response.headers['accept-encoding']).toBe('identity');
      }
      const plain = await t.app.inject({
        method: 'POST',
        url: '/api/login',
        payload: JSON.stringify({ email: uniqueEmail(), password: STRONG_PASSWORD }),
        headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
        remoteAddress: randomIp(),
      });
      expectError(plain, 401, 'invalid_credentials');
    });

    it('malformed JSON gets 400 invalid_json', async () => {
      expectError(
        await raw('/api/login', '{"email": "a@b.test",', 'application/json'),
        400,
        'invalid_json',
      );
      expectError(await raw('/api/login', "{'a': 1}", 'application/json'), 400, 'invalid_json');
    });

    it('a body that is not UTF-8 gets 400 invalid_json, never read with U+FFFD in place of its bytes', async () => {
      const email = uniqueEmail();
      const latin1 = (password: string) =>
        Buffer.from(JSON.stringify({ email, password }), 'latin1');
      const registered = await raw(
        '/api/register',
        latin1('correct-horse-\u00e4\u00f6\u00fc\u00df-battery'),
        'application/json',
      );
      expectError(registered, 400, 'invalid_json');
      // Nothing was created: the address is free, and registers with a password in UTF-8.
      const created = await t.post(
        '/api/register',
        { email, password: 'correct-horse-\u00e4\u00f6\u00fc\u00df-battery' },
        { ip: randomIp() },
      );
      expect(created.statusCode).toBe(201);
      // Before, any four invalid bytes signed in as any other four: both read as U+FFFD.
      const other = Buffer.concat([
        Buffer.from(`{"email":"${email}","password":"correct-horse-`),
        Buffer.from([0x80, 0x81, 0x82, 0x83]),
        Buffer.from('-battery"}'),
      ]);
      expectError(await raw('/api/login', other, 'application/json'), 400, 'invalid_json');
    });

    it.each(['iso-8859-1', 'utf-16', '"windows-1252"'])(
      'a body declared in another charset (%s) gets 415 unsupported_media_type',
      async (charset) => {
        const body = JSON.stringify({ email: uniqueEmail(), password: STRONG_PASSWORD });
        const response = await raw('/api/login', body, `application/json; charset=${charset}`);
        expectError(response, 415, 'unsupported_media_type');
      },
    );

    it('a body declared UTF-8, in any usual spelling, is read', async () => {
      for (const charset of ['utf-8', 'UTF-8', 'utf8', '"utf-8"']) {
        const body = JSON.stringify({ email: uniqueEmail(), password: STRONG_PASSWORD });
        const response = await raw('/api/login', body, `application/json; charset=${charset}`);
        expectError(response, 401, 'invalid_credentials');
      }
    });

    it('a body over 16 KiB gets 413 payload_too_large', async () => {
      const body = JSON.stringify({ email: uniqueEmail(), password: 'x'.repeat(17 * 1024) });
      expectError(await raw('/api/login', body, 'application/json'), 413, 'payload_too_large');
    });

    it('a body of just under 16 KiB is read (and judged on its fields)', async () => {
      const body = JSON.stringify({ email: 'a@b.test', password: 'x', pad: 'y'.repeat(16_000) });
      expect(Buffer.byteLength(body)).toBeLessThan(16 * 1024);
      const response = await raw('/api/login', body, 'application/json');
      expect(response.statusCode).toBe(401);
    });

    it.each(['[]', '42', 'null', '"text"', 'true'])(
      'a JSON body that is not an object (%s) gets 400 validation_failed with details',
      async (payload) => {
        const response = await raw('/api/login', payload, 'application/json');
        const body = expectError(response, 400, 'validation_failed');
        expect(body.details?.length).toBeGreaterThan(0);
      },
    );

    describe('an empty body under Content-Type: application/json is no body', () => {
      const empty = (method: string, url: string, token: string) =>
        t.call(method as 'PUT', url, {
          token,
          body: '',
          headers: { 'content-type': 'application/json' },
        });

      it('a route that takes none, or only optional fields, answers as without the header', async () => {
        const [me, other] = [await t.register(), await t.register()];
        const blocked = await empty('PUT', `/api/blocks/${other.userId}`, me.accessToken);
        expect(blocked.statusCode, blocked.body).toBe(200);
        expect(blocked.json()).toEqual({ blocked: true });
        const unblocked = await empty('DELETE', `/api/blocks/${other.userId}`, me.accessToken);
        expect(unblocked.json()).toEqual({ blocked: false });
        expect((await empty('PATCH', '/api/profile', me.accessToken)).statusCode).toBe(200);
        expect((await empty('POST', '/api/logout', me.accessToken)).statusCode).toBe(200);
      });

      it('a route that needs fields names each one missing (validation_failed, not invalid_json)', async () => {
        const response = await raw('/api/login', '', 'application/json');
        expect(fieldsOf(expectError(response, 400, 'validation_failed')).sort()).toEqual([
          'email',
          'password',
        ]);
      });
    });

    it.each(['[]', '42', 'null', '"text"'])(
      'a body that is not an object (%s) is refused by a route that takes no body as well',
      async (payload) => {
        const [me, other] = [await t.register(), await t.register()];
        const send = (method: string, url: string) =>
          t.call(method as 'PUT', url, {
            token: me.accessToken,
            body: payload,
            headers: { 'content-type': 'application/json' },
          });
        const block = await send('PUT', `/api/blocks/${other.userId}`);
        expect(fieldsOf(expectError(block, 400, 'validation_failed'))).toEqual(['body']);
        expectError(await send('DELETE', '/api/influencers/me'), 400, 'validation_failed');
        // Nothing changed.
        const blocks = await t.call('GET', '/api/blocks', { token: me.accessToken });
        expect(blocks.json().blocks).toEqual([]);
      },
    );

    it('missing required fields are each listed in details by field name', async () => {
      const body = expectError(
        await t.post('/api/reset-password', {}, { ip: randomIp() }),
        400,
        'validation_failed',
      );
      expect(fieldsOf(body)).toEqual(expect.arrayContaining(['email', 'code', 'new_password']));
    });

    it('a number for a string field is validation_failed (no coercion)', async () => {
      const body = expectError(
        await t.post(
          '/api/login',
          { email: uniqueEmail(), password: 12345678 },
          { ip: randomIp() },
        ),
        400,
        'validation_failed',
      );
      expect(fieldsOf(body)).toEqual(['password']);
      const forgot = expectError(
        await t.post('/api/forgot-password', { email: 42 }, { ip: randomIp() }),
        400,
        'validation_failed',
      );
      expect(fieldsOf(forgot)).toEqual(['email']);
    });

    it('a value of the wrong form is told what the field asks for, in words, not as a regular expression', async () => {
      const named = expectError(
        await t.post(
          '/api/register',
          { email: uniqueEmail(), password: STRONG_PASSWORD, name: 'Ann\u0007' },
          { ip: randomIp() },
        ),
        400,
        'validation_failed',
      );
      expect(named.details).toEqual([
        { field: 'name', message: 'must not contain control characters' },
      ]);
      const listed = await t.call('GET', '/api/influencers?limit=07', { ip: randomIp() });
      expect(expectError(listed, 400, 'validation_failed').details).toEqual([
        { field: 'limit', message: 'must be a whole number, without sign or leading zeros' },
      ]);
    });

    it('names each problem of a field once: a 16 KiB body cannot make a 1 MiB answer', async () => {
      const account = await t.register();
      const body = { handle: 'abc', display_name: 'x', categories: Array(5_000).fill(1) };
      const response = await t.post('/api/influencers', body, { token: account.accessToken });
      const { details } = expectError(response, 400, 'validation_failed');
      expect(details).toEqual(
        expect.arrayContaining([{ field: 'categories', message: expect.any(String) }]),
      );
      expect(details?.length).toBeLessThanOrEqual(20);
      expect(new Set(details?.map((d) => JSON.stringify(d))).size).toBe(details?.length);
      expect(response.body.length).toBeLessThan(4_096);
    });

    it('a string for a boolean field is validation_failed (no coercion)', async () => {
      const account = await t.register();
      const response = await t.post('/api/logout', { all: 'true' }, { token: account.accessToken });
      expect(fieldsOf(expectError(response, 400, 'validation_failed'))).toEqual(['all']);
      // Not logged out.
      expect(
        (await t.call('GET', '/api/sessions', { token: account.accessToken })).statusCode,
      ).toBe(200);
    });

    it('unknown request fields are ignored', async () => {
      const account = await t.register();
      const response = await t.post(
        '/api/login',
        { email: account.email, password: account.password, remember_me: true, extra: { a: 1 } },
        { ip: randomIp() },
      );
      expect(response.statusCode).toBe(200);
      expect(response.json().message).toBe('Login successful');
    });
  });

  describe('routing', () => {
    it('a URL that is not valid percent-encoding gets 400 bad_request in our error shape', async () => {
      expectError(await t.call('GET', '/api/%zz'), 400, 'bad_request');
    });

    it('a request refused before routing is logged and counted like any other', async () => {
      const counted = async () => {
        const text = (await t.call('GET', '/metrics')).body;
        const line = /^http_requests_total\{method="GET",route="unmatched",status="400"\} (\d+)$/m;
        return Number(line.exec(text)?.[1] ?? 0);
      };
      const before = await counted();
      const url = `/api/sessions/${Date.now()}%ZZ`;
      expectError(await t.call('GET', url), 400, 'bad_request');
      expect(await counted()).toBe(before + 1);
      const logged = t.logs
        .map((line) => JSON.parse(line) as { msg: string; status?: number; url?: string })
        .filter((line) => line.msg === 'request completed' && line.url === url);
      expect(logged.map((line) => line.status)).toEqual([400]);
    });

    it('a path parameter longer than any id gets 404 not_found in our error shape', async () => {
      const account = await t.register();
      const response = await t.call('DELETE', `/api/sessions/${'a'.repeat(150)}`, {
        token: account.accessToken,
      });
      expectError(response, 404, 'not_found');
    });

    it('an unknown route gets 404 {error:"not_found"} as JSON', async () => {
      expectError(await t.call('GET', '/api/no-such-thing'), 404, 'not_found');
      expectError(await t.call('POST', '/nowhere', { body: {} }), 404, 'not_found');
    });

    it('a wrong method on a known path gets 405 method_not_allowed with an Allow header', async () => {
      const login = await t.call('PUT', '/api/login', { body: {} });
      expectError(login, 405, 'method_not_allowed');
      expect(String(login.headers.allow)).toMatch(/\bPOST\b/);

      const sessions = await t.call('POST', '/api/sessions/some-id', { body: {} });
      expectError(sessions, 405, 'method_not_allowed');
      expect(String(sessions.headers.allow)).toMatch(/\bDELETE\b/);

      const profile = await t.call('PUT', '/api/profile', { body: {} });
      expectError(profile, 405, 'method_not_allowed');
      const allowed = String(profile.headers.allow)
        .split(',')
        .map((m) => m.trim());
      expect(allowed).toEqual(expect.arrayContaining(['GET', 'PATCH', 'DELETE']));
    });

    it('an unknown route or a wrong method answers 404/405 whatever body came (no route reads it)', async () => {
      const send = (method: 'POST' | 'PUT', url: string, payload: string, charset = '') =>
        t.app.inject({
          method,
          url,
          headers: { 'content-type': `application/json${charset}` },
          payload,
        });
      for (const payload of ['[]', '42', '{"a":', '"\\ud800"'])
        expectError(await send('POST', '/api/no-such-route', payload), 404, 'not_found');
      expectError(
        await send('POST', '/api/no-such-route', '{}', '; charset=latin1'),
        404,
        'not_found',
      );
      for (const payload of ['[]', '{"a":']) {
        const login = await send('PUT', '/api/login', payload);
        expectError(login, 405, 'method_not_allowed');
        expect(login.headers.allow).toBe('POST');
      }
    });

    it('a query string does not hide the path: a wrong method with one still gets 405 with Allow', async () => {
      const profile = await t.call('PUT', '/api/profile?fields=name', { body: {} });
      expectError(profile, 405, 'method_not_allowed');
      expect(profile.headers.allow).toBe('DELETE, GET, HEAD, PATCH');
      const login = await t.call('GET', '/api/login?next=%2F');
      expectError(login, 405, 'method_not_allowed');
      expect(login.headers.allow).toBe('POST');
    });

    it('a path with a trailing slash is another path: 404 for every method, never a 405 naming one that 404s too', async () => {
      for (const method of ['GET', 'POST'] as const)
        expectError(await t.call(method, '/api/login/', { body: {} }), 404, 'not_found');
      for (const method of ['GET', 'DELETE'] as const)
        expectError(await t.call(method, '/api/sessions/some-id/', { body: {} }), 404, 'not_found');
    });
  });

  it('other error answers carry message and error, and details only on validation_failed/weak_password', async () => {
    const account = await t.register();
    expectError(
      await t.post('/api/login', { email: account.email, password: 'wrong-Password-42' }),
      401,
      'invalid_credentials',
    );
    expectError(await t.call('GET', '/api/sessions'), 401, 'unauthorized');
    expectError(
      await t.post('/api/refresh-token', { refresh_token: 'garbage' }),
      401,
      'invalid_refresh_token',
    );
    expectError(
      await t.post(
        '/api/change-password',
        { password: STRONG_PASSWORD, new_password: 'short' },
        { token: account.accessToken },
      ),
      400,
      'weak_password',
    );
    expectError(
      await t.post('/api/register', { email: account.email, password: STRONG_PASSWORD }),
      409,
      'email_taken',
    );
  });

  // API.md "Conventions": codes for the generic cases include `internal_error`; "A 5xx never
  // reveals internals (no stack, no SQL)".
  it('a bug is answered 500 internal_error in the error shape, revealing neither its message nor its stack, and logged with its stack', async () => {
    const secretDetail = 'SELECT password_hash FROM users WHERE id = 42';
    let failNext = false;
    // Another instance on this database, whose clock throws once, on its next reading after
    // failNext is set: a bug, not a client's mistake.
    const failing = await TestApp.start(t.backend, {
      overrides: {
        clock: () => {
          if (failNext) {
            failNext = false;
            throw new Error(secretDetail);
          }
          return t.clock.now();
        },
      },
    });
    try {
      const account = await failing.register();
      failNext = true;
      const response = await failing.call('GET', '/api/profile', { token: account.accessToken });
      expect(failNext).toBe(false); // the failure did happen in this request
      expectError(response, 500, 'internal_error');
      expect(response.json()).toEqual({
        message: 'Something went wrong on our side.',
        error: 'internal_error',
      });
      expect(response.body).not.toContain('SELECT');
      expect(response.body).not.toContain('.ts:');
      // What the answer hides, the log keeps: one error line with the stack, for the operator.
      const failures = failing.logs
        .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { stack?: string } })
        .filter((line) => line.msg === 'request failed');
      expect(failures.map((line) => line.level)).toEqual([50]);
      expect(failures[0]?.err?.stack).toMatch(/\n\s+at /);
      // The next request is served as usual.
      expect(
        (await failing.call('GET', '/api/profile', { token: account.accessToken })).statusCode,
      ).toBe(200);
    } finally {
      await failing.close();
    }
  });

  describe('per-IP limit on the Auth group: 300 requests a minute to unauthenticated endpoints', () => {
    // A cheap request: refused by validation, but still counted.
    const cheap = (ip: string) => t.post('/api/forgot-password', {}, { ip });
    async function burst(ip: string, count: number) {
      for (let i = 0; i < count; i++) {
        const response = await cheap(ip);
        expect(response.statusCode, `request ${i + 1} of ${count}`).toBe(400);
      }
    }

    it('the 301st request in a minute gets 429 rate_limited with Retry-After; other IPs are unaffected', async () => {
      const ip = randomIp();
      await burst(ip, 300);
      const refused = await cheap(ip);
      expectError(refused, 429, 'rate_limited');
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Every unauthenticated Auth endpoint shares the count.
      expectError(
        await t.post('/api/login', { email: 'a@b.test', password: 'x' }, { ip }),
        429,
        'rate_limited',
      );
      expectError(
        await t.post('/api/refresh-token', { refresh_token: 'garbage' }, { ip }),
        429,
        'rate_limited',
      );
      expect((await cheap(randomIp())).statusCode).toBe(400);
    });

    it('counts requests to any group without a valid token: none, or a forged one, answers 429 once spent', async () => {
      const ip = randomIp();
      const account = await t.register();
      const forged = `${account.accessToken.slice(0, -4)}AAAA`;
      for (let i = 0; i < 300; i++) {
        const token = i % 2 === 0 ? forged : undefined;
        const url = i % 3 === 0 ? '/api/profile' : '/api/chat/unread';
        const response = await t.call('GET', url, { ip, token });
        expect(response.statusCode, `request ${i + 1}`).toBe(401);
      }
      expectError(await t.call('GET', '/api/profile', { ip, token: forged }), 429, 'rate_limited');
      expectError(await t.call('GET', '/api/profile', { ip }), 429, 'rate_limited');
      expectError(await cheap(ip), 429, 'rate_limited');
      // A valid token is not held to it.
      const own = await t.call('GET', '/api/profile', { ip, token: account.accessToken });
      expect(own.statusCode).toBe(200);
    });

    it('counts over a sliding 60 s window, not clock-aligned minutes', async () => {
      const ip = randomIp();
      // Start 40 s before a minute boundary M of the service's clock.
      const now = t.clock.now();
      const boundary = Math.ceil((now + 45_000) / 60_000) * 60_000;
      t.clock.advance(boundary - 40_000 - now);

      await burst(ip, 150); // at M-40s
      t.clock.advance(30_000);
      await burst(ip, 150); // at M-10s
      t.clock.advance(20_000);
      // At M+10s: a fresh clock minute (a fixed window would allow), but 300 lie in the last 60 s.
      expect(t.clock.now()).toBeGreaterThan(boundary);
      const refused = await cheap(ip);
      expectError(refused, 429, 'rate_limited');
      // The first 150 age out at M+20s.
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(11);

      t.clock.advance(12_000); // M+22s: only the second 150 lie in the last 60 s
      expect((await cheap(ip)).statusCode).toBe(400);
    });
  });

  describe('client IP', () => {
    it('without TRUST_PROXY, X-Forwarded-For is ignored: the session records the socket address', async () => {
      const account = await t.register();
      const ip = randomIp();
      const login = await t.post(
        '/api/login',
        { email: account.email, password: account.password },
        { ip, headers: { 'x-forwarded-for': '203.0.113.7' } },
      );
      expect(login.statusCode).toBe(200);
      const { sessions } = (
        await t.call('GET', '/api/sessions', { token: login.json().access_token })
      ).json();
      const current = sessions.find((s: { current: boolean }) => s.current);
      expect(current.ip).toBe(ip);
    });

    it('without TRUST_PROXY, X-Forwarded-For does not dodge the per-IP limit', async () => {
      const ip = randomIp();
      for (let i = 0; i < 300; i++) {
        await t.post(
          '/api/forgot-password',
          {},
          { ip, headers: { 'x-forwarded-for': randomIp() } },
        );
      }
      const refused = await t.post(
        '/api/forgot-password',
        {},
        { ip, headers: { 'x-forwarded-for': randomIp() } },
      );
      expectError(refused, 429, 'rate_limited');
    });
  });
});

describe.each(backends)('TRUST_PROXY ($name)', (backend) => {
  async function sessionIp(t: TestApp, socketIp: string, forwardedFor: string) {
    const account = await t.register();
    const login = await t.post(
      '/api/login',
      { email: account.email, password: account.password },
      { ip: socketIp, headers: { 'x-forwarded-for': forwardedFor } },
    );
    expect(login.statusCode).toBe(200);
    const { sessions } = (
      await t.call('GET', '/api/sessions', { token: login.json().access_token })
    ).json();
    return sessions.find((s: { current: boolean }) => s.current).ip as string;
  }

  describe('TRUST_PROXY=true', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await TestApp.start(backend, { env: { TRUST_PROXY: 'true' } });
    });
    afterAll(() => t.close());

    it('takes the client IP from the left-most X-Forwarded-For entry', async () => {
      expect(await sessionIp(t, randomIp(), '203.0.113.7, 198.51.100.2, 10.0.0.1')).toBe(
        '203.0.113.7',
      );
    });

    it('falls back to the socket address when the forwarded entry is not an IP address', async () => {
      const socketIp = randomIp();
      expect(await sessionIp(t, socketIp, `not-an-ip-${'z'.repeat(200)}, 198.51.100.2`)).toBe(
        socketIp,
      );
    });

    it('counts the per-IP limit by that address', async () => {
      const client = randomIp();
      for (let i = 0; i < 300; i++) {
        await t.post(
          '/api/forgot-password',
          {},
          {
            ip: randomIp(),
            headers: { 'x-forwarded-for': client },
          },
        );
      }
      const refused = await t.post(
        '/api/forgot-password',
        {},
        {
          ip: randomIp(),
          headers: { 'x-forwarded-for': client },
        },
      );
      expectError(refused, 429, 'rate_limited');
    });
  });

  describe('TRUST_PROXY=<list of proxies>', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await TestApp.start(backend, { env: { TRUST_PROXY: '10.0.0.0/8, 192.0.2.1' } });
    });
    afterAll(() => t.close());

    it('takes the right-most address that is not a trusted proxy', async () => {
      expect(await sessionIp(t, '10.1.2.3', '203.0.113.9, 198.51.100.4, 192.0.2.1, 10.9.9.9')).toBe(
        '198.51.100.4',
      );
    });

    it('ignores X-Forwarded-For from a socket that is not a trusted proxy', async () => {
      expect(await sessionIp(t, '198.51.100.200', '203.0.113.9')).toBe('198.51.100.200');
    });
  });
});
