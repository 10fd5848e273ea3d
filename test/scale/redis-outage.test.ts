import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../helpers/backends.js';
import { SmtpSink } from '../helpers/smtp-sink.js';
import { randomIp, STRONG_PASSWORD, uniqueEmail } from '../helpers/test-app.js';
import { canRunPrivateRedis, PrivateRedis } from './private-servers.js';
import { newAppSecret, ServiceProcess, waitUntil } from './service-process.js';

const databaseUrl = process.env.TEST_DATABASE_URL;
const enabled = Boolean(databaseUrl && process.env.TEST_REDIS_URL) && canRunPrivateRedis;
if (!enabled) {
  console.warn(
    'TEST_DATABASE_URL / TEST_REDIS_URL not set or no redis-server: skipping test/scale/redis-outage.',
  );
}

const UNAVAILABLE_WARNING = /Redis is unavailable/;
const BACK_NOTICE = /Redis is back/;

describe.skipIf(!enabled)('Redis goes away and comes back under the running service', () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let redis: PrivateRedis;
  let smtp: SmtpSink;
  let service: ServiceProcess;

  beforeAll(async () => {
    database = await createPostgresDatabase(databaseUrl as string);
    redis = await PrivateRedis.create();
    smtp = await SmtpSink.start();
    service = await ServiceProcess.start({
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      APP_SECRET: newAppSecret(),
      SMTP_URL: smtp.url,
    });
  });

  afterAll(async () => {
    await service?.kill();
    await redis?.kill();
    await smtp?.stop();
    await database?.drop();
  });

  const login = (email: string, password: string) =>
    service.post('/api/login', { email, password }, { ip: randomIp() });

  it('falls back to memory limits while Redis is down, and shares them in Redis again after', async () => {
    const email = uniqueEmail();
    expect((await service.post('/api/register', { email, password: STRONG_PASSWORD })).status).toBe(
      201,
    );
    expect((await service.get('/readyz')).status).toBe(200);
    expect((await login(email, STRONG_PASSWORD)).status).toBe(200);
    expect(redis.cli('--scan', '--pattern', 'limits:*')).not.toBe('');

    await redis.kill();

    // Readiness says which dependency is down, and stays 200: the instance still serves every
    // request, so a load balancer must not take it (and every other instance) out.
    const ready = await service.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: 'degraded',
      checks: { redis: 'down', database: 'up' },
    });

    // Logins still work, and the lockout still holds (in this instance's memory).
    expect((await login(email, STRONG_PASSWORD)).status).toBe(200);
    expect(service.logsMatching(UNAVAILABLE_WARNING)).toHaveLength(1);
    const target = uniqueEmail();
    for (let i = 0; i < 10; i++)
      expect((await login(target, 'wrong-Password-12')).status).toBe(401);
    const locked = await login(target, 'wrong-Password-12');
    expect(locked.status).toBe(429);
    expect(locked.body.error).toBe('too_many_attempts');
    // One warning per outage, not one per request.
    expect(service.logsMatching(UNAVAILABLE_WARNING)).toHaveLength(1);
    expect(service.alive).toBe(true);

    await redis.start(); // same port, empty
    await waitUntil(
      'readiness to recover',
      async () => (await service.get('/readyz')).body.status === 'ok',
      10_000,
    );
    // The limiter finds Redis back by its background probe (within 5 s), not by a request.
    await waitUntil(
      'the limiter to find Redis back',
      () => service.logsMatching(BACK_NOTICE).length === 1,
      10_000,
    );
    const other = uniqueEmail();
    expect((await login(other, 'wrong-Password-12')).status).toBe(401);
    expect(service.logsMatching(BACK_NOTICE)).toHaveLength(1);
    const keys = (redis.cli('--scan', '--pattern', 'limits:*') ?? '').split('\n').filter(Boolean);
    expect(keys.some((key) => key.startsWith('limits:login-failures'))).toBe(true);
    expect((await login(email, STRONG_PASSWORD)).status).toBe(200);
  });
});
