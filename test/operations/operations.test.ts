import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends, createPostgresDatabase } from '../helpers/backends.js';
import { queueMail } from '../helpers/outbox.js';
import { randomIp, TestApp, uniqueEmail } from '../helpers/test-app.js';

/** Every operation of API.md's Auth and Profile groups, as OpenAPI paths. */
const CONTRACT_OPERATIONS: Record<string, string[]> = {
  '/api/register': ['post'],
  '/api/login': ['post'],
  '/api/refresh-token': ['post'],
  '/api/logout': ['post'],
  '/api/send-confirmation-code': ['post'],
  '/api/confirm-email': ['post'],
  '/api/change-password': ['post'],
  '/api/forgot-password': ['post'],
  '/api/reset-password': ['post'],
  '/api/sessions': ['get'],
  '/api/sessions/{id}': ['delete'],
  '/api/profile': ['get', 'patch', 'delete'],
};

type Json = Record<string, unknown>;

describe.each(backends)('operations endpoints ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('GET /healthz answers 200 {status:"ok"}', async () => {
    const response = await t.call('GET', '/healthz');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers 200 {status:"ok", checks} while the database (and Redis) answer', async () => {
    const response = await t.call('GET', '/readyz');
    expect(response.statusCode).toBe(200);
    const checks = t.backend.env.REDIS_URL ? { database: 'up', redis: 'up' } : { database: 'up' };
    expect(response.json()).toEqual({ status: 'ok', checks });
  });

  describe('GET /metrics', () => {
    it('is Prometheus text with request counts by route pattern (never a raw id), latencies, hash timings and outbox depth', async () => {
      const account = await t.register();
      const rawId = `raw-${randomBytes(6).toString('hex')}`;
      const revoke = await t.call('DELETE', `/api/sessions/${rawId}`, {
        token: account.accessToken,
      });
      expect(revoke.statusCode).toBe(404);

      const response = await t.call('GET', '/metrics');
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/plain/);
      const text = response.body;
      expect(text).toMatch(/^# TYPE http_requests_total counter$/m);
      expect(text).toMatch(
        /^http_requests_total\{(?=[^}]*method="DELETE")(?=[^}]*route="\/api\/sessions\/:id")(?=[^}]*status="404")[^}]*\} 1$/m,
      );
      expect(text).toMatch(
        /^http_requests_total\{(?=[^}]*method="POST")(?=[^}]*route="\/api\/register")(?=[^}]*status="201")[^}]*\} \d+$/m,
      );
      expect(text).not.toContain(rawId);
      expect(text).toMatch(/^# TYPE http_request_duration_seconds histogram$/m);
      expect(text).toMatch(/^http_request_duration_seconds_bucket\{[^}]*route="\/api\/register"/m);
      expect(text).toMatch(/^# TYPE password_hash_duration_seconds histogram$/m);
      expect(text).toMatch(/^password_hash_duration_seconds_count\{[^}]*\} [1-9]\d*$/m);
      expect(text).toMatch(/^mail_outbox_pending \d+$/m);
    });

    // The gauge's help: "E-mails waiting in the outbox (not yet delivered, not given up)". A mail
    // that failed for good is kept a week, but is not waiting.
    it('mail_outbox_pending counts the mails waiting, not those given up', async () => {
      // The e-mails of the accounts registered above are delivered first: the outbox starts empty.
      const outbox = () => t.db.selectFrom('mail_outbox').select('id').execute();
      await vi.waitFor(async () => expect(await outbox()).toEqual([]), {
        timeout: 15_000,
        interval: 50,
      });
      const now = t.clock.now();
      const queued = (failedAt: number | null) =>
        queueMail(t.db, {
          recipient: `${randomUUID()}@example.com`,
          created_at: now,
          next_attempt_at: now + 24 * 60 * 60_000, // not due: the app's worker leaves it alone
          attempts: 1,
          last_error: failedAt === null ? null : '550 no such mailbox',
          failed_at: failedAt,
        });
      const ids = [await queued(null), await queued(now), await queued(now)];
      try {
        const text = (await t.call('GET', '/metrics')).body;
        expect(/^mail_outbox_pending (\d+)$/m.exec(text)?.[1]).toBe('1');
      } finally {
        await t.db.deleteFrom('mail_outbox').where('id', 'in', ids).execute();
      }
    });

    it('labels an unknown path without its raw URL', async () => {
      const rawPath = `/no-such-${randomBytes(6).toString('hex')}`;
      expect((await t.call('GET', rawPath)).statusCode).toBe(404);
      const text = (await t.call('GET', '/metrics')).body;
      expect(text).not.toContain(rawPath);
    });
  });

  describe('GET /openapi.json', () => {
    let doc: Json;
    beforeAll(async () => {
      const response = await t.call('GET', '/openapi.json');
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      doc = response.json();
    });

    /** Follows a local `#/components/...` reference, if the schema is one. */
    function resolve(schema: Json): Json {
      const ref = schema.$ref;
      if (typeof ref !== 'string') return schema;
      const found = ref
        .replace(/^#\//, '')
        .split('/')
        .reduce<unknown>((node, key) => (node as Json | undefined)?.[key], doc);
      expect(found, `unresolvable $ref ${ref}`).toBeDefined();
      return resolve(found as Json);
    }

    it('is OpenAPI 3.1.0, version 1.0.0', () => {
      expect(doc.openapi).toBe('3.1.0');
      expect((doc.info as Json).version).toBe('1.0.0');
    });

    it('has every path of the Auth and Profile groups with its methods', () => {
      const paths = doc.paths as Record<string, Json>;
      for (const [path, methods] of Object.entries(CONTRACT_OPERATIONS)) {
        expect(paths, path).toHaveProperty([path]);
        for (const method of methods)
          expect(paths[path], `${method} ${path}`).toHaveProperty([method]);
      }
    });

    it('change-password requires bearerAuth, and its body requires password and new_password', () => {
      const operation = (doc.paths as Record<string, Record<string, Json>>)['/api/change-password']
        ?.post as Json;
      expect(operation.security).toEqual([{ bearerAuth: [] }]);
      const schemes = (doc.components as Json).securitySchemes as Record<string, Json>;
      expect(schemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
      const body = operation.requestBody as Json;
      const schema = resolve(
        ((body.content as Record<string, Json>)['application/json'] as Json).schema as Json,
      );
      expect(schema.required).toEqual(expect.arrayContaining(['password', 'new_password']));
      const properties = schema.properties as Record<string, Json>;
      expect(resolve(properties.password as Json).type).toBe('string');
      expect(resolve(properties.new_password as Json).type).toBe('string');
    });
  });

  it('GET /docs renders an HTML page', async () => {
    let response = await t.call('GET', '/docs');
    if (response.statusCode >= 300 && response.statusCode < 400) {
      const location = new URL(String(response.headers.location), 'http://service.test');
      response = await t.call('GET', location.pathname + location.search);
    }
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.body).toMatch(/<html/i);
    const policy = String(response.headers['content-security-policy']);
    expect(policy).toMatch(/default-src 'self'/);
    expect(policy).toMatch(/script-src 'self'[;\s]/);
    expect(policy).toMatch(/frame-ancestors 'self'/);
    expect(policy).not.toMatch(/upgrade-insecure-requests/);
  });

  it('GET /.well-known/jwks.json publishes P-256 public keys (kty EC, crv P-256, alg ES256, use sig, kid), no private part', async () => {
    const response = await t.call('GET', '/.well-known/jwks.json');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const { keys } = response.json() as { keys: Json[] };
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(typeof key.kid).toBe('string');
      expect(typeof key.x).toBe('string');
      expect(typeof key.y).toBe('string');
      expect(key).not.toHaveProperty('d');
    }
    const account = await t.register();
    const header = JSON.parse(
      Buffer.from(account.accessToken.split('.')[0] as string, 'base64url').toString(),
    );
    expect(keys.map((k) => k.kid)).toContain(header.kid);
  });
});

describe.each(backends)('readiness with Redis away ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    // Nothing listens on port 1: every Redis command fails at once.
    t = await TestApp.start(backend, { env: { REDIS_URL: 'redis://127.0.0.1:1' } });
  });
  afterAll(() => t.close());

  it('GET /readyz answers 200 {status:"degraded", checks:{database:"up", redis:"down"}}: the instance still serves, so it stays in the balancer', async () => {
    const response = await t.call('GET', '/readyz');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({
      status: 'degraded',
      checks: { database: 'up', redis: 'down' },
    });
  });

  it('register and login still work (limits fall back to memory)', async () => {
    const account = await t.register();
    const login = await t.post(
      '/api/login',
      { email: account.email, password: account.password },
      { ip: randomIp() },
    );
    expect(login.statusCode).toBe(200);
    expect(login.json().message).toBe('Login successful');
  });

  it('the fallback still enforces limits (10 failed logins → 429 too_many_attempts)', async () => {
    const account = await t.register();
    for (let i = 0; i < 10; i++) {
      const wrong = await t.post(
        '/api/login',
        { email: account.email, password: 'wrong-Password-00' },
        { ip: randomIp() },
      );
      expect(wrong.statusCode).toBe(401);
    }
    const refused = await t.post(
      '/api/login',
      { email: account.email, password: account.password },
      { ip: randomIp() },
    );
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toBe('too_many_attempts');
  });
});

const adminUrl = process.env.TEST_DATABASE_URL;

describe.runIf(adminUrl)('readiness with the database gone (postgres)', () => {
  let t: TestApp;
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  beforeAll(async () => {
    database = await createPostgresDatabase(adminUrl as string);
    t = await TestApp.start({
      env: { DATABASE_URL: database.url, APP_SECRET: randomBytes(32).toString('base64url') },
      drop: () => database.drop(),
    });
  });
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  it('GET /readyz answers 503 {status:"unavailable", checks:{database:"down"}} once the database is dropped', async () => {
    expect((await t.call('GET', '/readyz')).statusCode).toBe(200);
    await database.drop();
    const response = await t.call('GET', '/readyz');
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({ status: 'unavailable', checks: { database: 'down' } });
    expect((await t.call('GET', '/healthz')).statusCode).toBe(200);
  });

  it('GET /metrics keeps answering Prometheus text, the 503s of the outage counted', async () => {
    const response = await t.call('GET', '/metrics');
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toMatch(/http_requests_total\{[^}]*route="\/readyz"[^}]*status="503"/);
  });

  it('a request that needs the database answers 503 unavailable, revealing no internals', async () => {
    const response = await t.post(
      '/api/login',
      { email: 'nobody@example.test', password: 'whatever-Password-1' },
      { ip: randomIp() },
    );
    expect(response.statusCode).toBe(503);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(['error', 'message']);
    expect(body.error).toBe('unavailable');
    expect(response.body).not.toMatch(/database|select|postgres|\bat\s/i);
  });

  it('logs the outage once with one stack, then a count of refused requests every 10 s, not a line per request', async () => {
    const refuse = async (n: number) => {
      const responses = await Promise.all(
        Array.from({ length: n }, () =>
          t.post(
            '/api/login',
            { email: uniqueEmail('outage'), password: 'whatever-Password-1' },
            { ip: randomIp() },
          ),
        ),
      );
      for (const response of responses) expect(response.statusCode).toBe(503);
    };
    const outageLines = () =>
      t.logs
        .map((line) => JSON.parse(line) as Json)
        .filter((line) => /^database is (still )?unavailable/.test(String(line.msg)));

    await refuse(20);
    t.clock.advance(10_500);
    await refuse(1);

    const lines = outageLines();
    expect(lines.map((line) => [line.level, line.msg])).toEqual([
      [
        50,
        'database is unavailable: requests that need it answer 503 unavailable until it is back',
      ],
      [
        50,
        expect.stringMatching(
          /^database is still unavailable: \d+ requests refused in the last 1\d(\.\d)? s$/,
        ),
      ],
    ]);
    expect((lines[0]?.err as Json).stack).toMatch(/\n\s+at /);
    expect(lines[1]).not.toHaveProperty('err');
    // The count covers the 20 refused above and the one that wrote it (and any earlier test's).
    expect(lines[1]?.failed).toBeGreaterThanOrEqual(21);
    // No request wrote an error line of its own.
    expect(t.logs.filter((line) => line.includes('request failed'))).toEqual([]);
  });
});
