import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SocketClient } from '../chat/realtime/socket-client.js';
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
    // The logins sign in another account: ten a second, they would soon end the session of
    // `token` as the least recently used beyond the account's 100.
    const signingIn = uniqueEmail();
    const other = await service.post('/api/register', {
      email: signingIn,
      password: STRONG_PASSWORD,
    });
    expect(other.status).toBe(201);

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
                { email: signingIn, password: STRONG_PASSWORD },
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
    const logsBefore = service.logs.length;
    await postgres.stop(); // pg_ctl -w: returns once the server is down
    const stoppedAt = Date.now();
    await sleep(1_000);
    const readyDuringOutage = await service.get('/readyz', { timeoutMs: 5_000 });
    // Load on top of the steady traffic: 200 requests at once, every one refused.
    const burst = await Promise.all(
      Array.from({ length: 200 }, () => service.get('/api/profile', { token, timeoutMs: 5_000 })),
    );
    await sleep(1_500);
    const restartedAt = Date.now();
    await postgres.start();
    await waitUntil(
      'the service to answer 200 again',
      async () => (await service.get('/api/profile', { token })).status === 200,
      15_000,
    );
    // Back once it has answered for 10 s without refusing anything (db/outage.ts: a database that
    // answers reads and refuses writes is not back); the traffic goes on meanwhile.
    await waitUntil(
      'the outage log to find the database back',
      async () =>
        service.logs.slice(logsBefore).some((line) => /database is back after/.test(line)),
      20_000,
    );
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

    // The outage is logged, not flooded: one line when the database goes away (the only stack),
    // one when it is back with the count of refused requests; no line per refused request.
    expect(burst.map((reply) => reply.status)).toEqual(burst.map(() => 503));
    const outageLogs = service.logs.slice(logsBefore);
    const lines = outageLogs.map((line) => JSON.parse(line) as Record<string, unknown>);
    const refused = duringOutage.length + burst.length;
    const about = (pattern: RegExp) => lines.filter((line) => pattern.test(String(line.msg)));
    expect(about(/^database is unavailable/)).toHaveLength(1);
    expect(about(/^database is unavailable/)[0]).toMatchObject({ level: 50 });
    const back = about(/^database is back after/);
    expect(back).toHaveLength(1);
    expect(back[0]?.failed).toBeGreaterThanOrEqual(refused);
    expect(about(/^request failed/)).toEqual([]);
    // Nothing else: the mail worker's failed polls (one a second) go to the same outage log.
    const others = lines.filter((line) => !/^database is/.test(String(line.msg)));
    expect(others).toEqual([]);
    expect(outageLogs.length, outageLogs.join('\n')).toBeLessThan(20);
    expect(outageLogs.length).toBeLessThan(refused / 10);

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
  }, 60_000); // the outage ends 10 s after the last refusal (db/outage.ts)

  it('closes a new chat socket with 1013 (try again later), not 4401, and keeps the open ones', async () => {
    const registered = await service.post('/api/register', {
      email: uniqueEmail(),
      password: STRONG_PASSWORD,
    });
    const token = String(registered.body.access_token);
    const url = `ws://127.0.0.1:${service.port}/api/chat/ws`;
    const open = await SocketClient.connect(url, { token });
    await open.waitFor('ready');
    const logsBefore = service.logs.length;

    await postgres.stop();
    try {
      const refused = await SocketClient.connect(url, { token });
      expect((await refused.waitClosed()).code).toBe(1013);
      // A renewal that meets the outage leaves the socket on its current token.
      open.send({ type: 'auth', access_token: token });
      await open.roundTrip();
      await sleep(3_000); // longer than a failed check
      await open.roundTrip();
      expect(open.isOpen).toBe(true);
      // The outage log's one line, not one per refused socket.
      const lines = service.logs.slice(logsBefore);
      expect(lines.filter((line) => /database is unavailable/.test(line))).toHaveLength(1);
    } finally {
      await postgres.start();
    }
    const again = await SocketClient.connect(url, { token });
    await again.waitFor('ready');
    for (const client of [open, again]) client.close();
  });
});
