import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SmtpSink } from '../helpers/smtp-sink.js';
import { randomIp, STRONG_PASSWORD, uniqueEmail } from '../helpers/test-app.js';
import { canRunPrivatePostgres, PrivatePostgres } from './private-servers.js';
import { newAppSecret, ServiceProcess, sleep, waitUntil } from './service-process.js';

const enabled = Boolean(process.env.TEST_DATABASE_URL) && canRunPrivatePostgres;
if (!enabled) {
  console.warn(
    'TEST_DATABASE_URL not set or no PostgreSQL binaries: skipping test/scale/postgres-restart.',
  );
}

interface Outcome {
  readonly kind: 'profile' | 'login';
  readonly startedAt: number;
  readonly status: number | 'timeout' | 'network-error';
  readonly error?: unknown;
  readonly message?: unknown;
}

describe.skipIf(!enabled)('PostgreSQL stops and starts under the running service', () => {
  let postgres: PrivatePostgres;
  let smtp: SmtpSink;
  let service: ServiceProcess;

  beforeAll(async () => {
    postgres = await PrivatePostgres.create();
    smtp = await SmtpSink.start();
    service = await ServiceProcess.start({
      DATABASE_URL: postgres.url,
      APP_SECRET: newAppSecret(),
      SMTP_URL: smtp.url,
    });
  });

  afterAll(async () => {
    await service?.kill();
    await smtp?.stop();
    await postgres?.destroy();
  });

  it('answers 503 unavailable quickly during the outage, stays alive, and recovers by itself', async () => {
    const email = uniqueEmail();
    const registered = await service.post('/api/register', { email, password: STRONG_PASSWORD });
    expect(registered.status).toBe(201);
    const token = String(registered.body.access_token);

    const outcomes: Outcome[] = [];
    let running = true;
    const send = async (kind: Outcome['kind']): Promise<void> => {
      const startedAt = Date.now();
      try {
        const reply =
          kind === 'profile'
            ? await service.get('/api/profile', { token, timeoutMs: 5_000 })
            : await service.post(
                '/api/login',
                { email, password: STRONG_PASSWORD },
                { ip: randomIp(), timeoutMs: 5_000 },
              );
        outcomes.push({
          kind,
          startedAt,
          status: reply.status,
          error: reply.body.error,
          message: reply.body.message,
        });
      } catch (error) {
        const timedOut = (error as Error).name === 'TimeoutError';
        outcomes.push({ kind, startedAt, status: timedOut ? 'timeout' : 'network-error' });
      }
    };
    const traffic = (async () => {
      while (running) {
        await Promise.all([send('profile'), send('login'), sleep(100)]);
      }
    })();

    await sleep(500);
    const stoppedAt = Date.now();
    await postgres.stop();
    await sleep(1_000);
    const readyDuringOutage = await service.get('/readyz', { timeoutMs: 5_000 });
    await sleep(2_000);
    const restartedAt = Date.now();
    await postgres.start();
    await waitUntil(
      'the service to answer 200 again',
      async () => (await service.get('/api/profile', { token })).status === 200,
      15_000,
    );
    await sleep(300);
    running = false;
    await traffic;

    // Readiness reports the database down while it is away.
    expect(readyDuringOutage.status).toBe(503);
    expect(readyDuringOutage.body).toMatchObject({
      status: 'unavailable',
      checks: { database: 'down' },
    });

    // No request hung, none was dropped, none answered 500.
    const failures = outcomes.filter((o) => typeof o.status !== 'number');
    expect(failures).toEqual([]);
    const serverErrors = outcomes.filter((o) => o.status !== 200 && o.status !== 503);
    expect(serverErrors, service.logsMatching(/"level":50/).join('\n')).toEqual([]);

    // Requests sent while PostgreSQL was down answered 503 {message, error:"unavailable"}.
    const duringOutage = outcomes.filter(
      (o) => o.startedAt > stoppedAt + 200 && o.startedAt < restartedAt,
    );
    expect(duringOutage.length).toBeGreaterThan(4);
    for (const outcome of duringOutage) {
      expect(outcome).toMatchObject({ status: 503, error: 'unavailable' });
      expect(typeof outcome.message).toBe('string');
    }
    expect(new Set(duringOutage.map((o) => o.kind))).toEqual(new Set(['profile', 'login']));

    // The same process recovered without a restart.
    expect(service.alive).toBe(true);
    expect((await service.get('/readyz')).status).toBe(200);
    expect((await service.get('/api/profile', { token })).status).toBe(200);
    const login = await service.post(
      '/api/login',
      { email, password: STRONG_PASSWORD },
      { ip: randomIp() },
    );
    expect(login.status).toBe(200);
  });
});
