import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp, uniqueEmail } from '../helpers/test-app.js';
import { canRunPrivateRedis, PrivateRedis } from '../scale/private-servers.js';
import { waitUntil } from '../scale/service-process.js';

if (!canRunPrivateRedis) console.warn('no redis-server: skipping test/limits/redis-hang.');

const COMMAND_TIMEOUT_MS = 500; // RedisWindowStore's
const WRONG_PASSWORD = 'not-the-Right-one-55';
const FAILED_LOGINS_PER_ACCOUNT = 10; // a minute

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

function logLines(t: TestApp): LogLine[] {
  return t.logs.flatMap((chunk) =>
    chunk
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LogLine),
  );
}

/**
 * The outage log's lines about Redis. Not the connections' own (a silence check that finds Redis
 * frozen reconnects, and says so), whose timing load decides.
 */
const aboutRedis = (t: TestApp) => logLines(t).filter((line) => /^Redis is /.test(line.msg));

/** No line carries a stack trace (pino's `err` serializer would add one). */
function expectNoStacks(t: TestApp) {
  for (const line of t.logs) {
    expect(line).not.toMatch(/"stack"|\\n\s+at /);
  }
}

describe.skipIf(!canRunPrivateRedis).each(backends)(
  'a Redis that hangs instead of refusing ($name)',
  (backend) => {
    let redis: PrivateRedis;
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      redis = await PrivateRedis.create();
      // Two instances sharing one Redis (each on its own database: limits live in Redis only),
      // as one deployment: one prefix.
      const env = { REDIS_URL: redis.url, REDIS_PREFIX: 'hang:' };
      a = await TestApp.start(backend, { env });
      b = await TestApp.start(backend, { env });
    });
    afterAll(async () => {
      redis?.thaw();
      await a?.close();
      await b?.close();
      await redis?.kill();
    });

    const login = (t: TestApp, email: string) =>
      t.post('/api/login', { email, password: WRONG_PASSWORD }, { ip: randomIp() });

    /** Failed logins for one address, alternating between the instances, until it is locked. */
    async function expectLockoutShared() {
      const email = uniqueEmail('shared');
      for (let i = 0; i < FAILED_LOGINS_PER_ACCOUNT; i++) {
        expect((await login(i % 2 === 0 ? a : b, email)).statusCode, `failure ${i + 1}`).toBe(401);
      }
      for (const t of [a, b]) {
        const locked = await login(t, email);
        expect(locked.statusCode).toBe(429);
        expect(locked.json().error).toBe('too_many_attempts');
      }
    }

    // Refused by validation, but one limiter call (the unauthenticated budget).
    const cheap = (t: TestApp) => t.post('/api/forgot-password', {}, { ip: randomIp() });

    it('shares limits between two instances through Redis', async () => {
      await expectLockoutShared();
    });

    it('while Redis is frozen, serves limited requests from memory without waiting for it', async () => {
      redis.freeze();
      const requests = 20;
      const started = performance.now();
      for (let i = 0; i < requests; i++) expect((await cheap(a)).statusCode).toBe(400);
      const elapsed = performance.now() - started;
      // At most the first request waits for Redis's command timeout; without the breaker every one
      // would (20 × 500 ms = 10 s).
      expect(elapsed).toBeLessThan((requests * COMMAND_TIMEOUT_MS) / 4);

      // Limits still hold, in this instance's memory.
      const email = uniqueEmail('frozen');
      for (let i = 0; i < FAILED_LOGINS_PER_ACCOUNT; i++) {
        expect((await login(a, email)).statusCode).toBe(401);
      }
      expect((await login(a, email)).json().error).toBe('too_many_attempts');

      // One warning for the outage, however many requests.
      const lines = aboutRedis(a);
      expect(lines.map((line) => line.msg)).toEqual([
        "Redis is unavailable: rate limits fall back to this instance's memory",
      ]);
      expect(lines[0]).toMatchObject({ level: 40, error: expect.any(String) });
    });

    it('counts the calls served from memory once a minute while Redis is away', async () => {
      for (const t of [a, b]) t.clock.advance(61_000);
      expect((await cheap(a)).statusCode).toBe(400);
      expect((await cheap(a)).statusCode).toBe(400);

      const reports = aboutRedis(a).filter((line) => line.msg.startsWith('Redis is still'));
      expect(reports).toHaveLength(1);
      // 20 cheap requests, 11 logins (at least 2 calls each), and this one.
      expect(reports[0]?.failed).toBeGreaterThan(20 + 2 * 11);
      expect(reports[0]?.msg).toMatch(
        /^Redis is still unavailable: \d+ limiter calls served from memory in the last 6\d(\.\d)? s$/,
      );
      expect(aboutRedis(a)).toHaveLength(2);
      expectNoStacks(a);
    });

    it('after Redis thaws, the limits are shared through Redis again', async () => {
      redis.thaw();
      await waitUntil(
        'the limiter to find Redis back',
        () => aboutRedis(a).some((line) => line.msg.startsWith('Redis is back')),
        15_000,
      );
      await expectLockoutShared();

      const lines = aboutRedis(a);
      expect(lines.map((line) => line.msg.split(/:| after /)[0])).toEqual([
        'Redis is unavailable',
        'Redis is still unavailable',
        'Redis is back',
      ]);
      expect(lines[2]).toMatchObject({ failed: expect.any(Number) });
      expectNoStacks(a);
      expect(aboutRedis(b)).toEqual([]); // b made no call while Redis was frozen
    });
  },
);

describe.skipIf(!canRunPrivateRedis)('a lockout lifted while Redis hangs', () => {
  let redis: PrivateRedis;
  let t: TestApp;
  beforeAll(async () => {
    redis = await PrivateRedis.create();
    t = await TestApp.start(backends[0] as (typeof backends)[number], {
      env: { REDIS_URL: redis.url },
    });
  });
  afterAll(async () => {
    redis?.thaw();
    await t?.close();
    await redis?.kill();
  });

  it('stays lifted when Redis, which kept the failures, answers again', async () => {
    const account = await t.register();
    await t.codeFor(account.email); // the registration e-mail, out of the way
    for (let i = 0; i < FAILED_LOGINS_PER_ACCOUNT; i++) {
      const failed = await t.post(
        '/api/login',
        { email: account.email, password: WRONG_PASSWORD },
        { ip: randomIp() },
      );
      expect(failed.statusCode).toBe(401);
    }
    const login = (password: string) =>
      t.post('/api/login', { email: account.email, password }, { ip: randomIp() });
    expect((await login(account.password)).statusCode).toBe(429);

    redis.freeze(); // the failures stay in Redis, which does not answer
    expect((await t.post('/api/forgot-password', { email: account.email })).statusCode).toBe(200);
    const code = await t.codeFor(account.email, 2);
    const newPassword = 'another-Lagoon-93-tractor';
    const reset = await t.post('/api/reset-password', {
      email: account.email,
      code,
      new_password: newPassword,
    });
    expect(reset.statusCode, reset.body).toBe(200); // "a successful password reset lifts it"

    redis.thaw();
    await waitUntil(
      'the limiter to find Redis back',
      () => aboutRedis(t).some((line) => line.msg.startsWith('Redis is back')),
      15_000,
    );
    const after = await login(newPassword);
    expect(after.statusCode, after.body).toBe(200);
  });
});
