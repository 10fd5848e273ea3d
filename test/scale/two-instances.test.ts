import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../helpers/backends.js';
import { SmtpSink } from '../helpers/smtp-sink.js';
import { randomIp, STRONG_PASSWORD, uniqueEmail } from '../helpers/test-app.js';
import { freePort, newAppSecret, ServiceProcess, type Reply } from './service-process.js';

const databaseUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;
if (!databaseUrl || !redisUrl) {
  console.warn('TEST_DATABASE_URL / TEST_REDIS_URL not set: skipping test/scale/two-instances.');
}

function kidOf(token: unknown): string {
  const header = JSON.parse(Buffer.from(String(token).split('.')[0] ?? '', 'base64url').toString());
  return (header as { kid: string }).kid;
}

function jwksKids(reply: Reply): string[] {
  return (reply.body.keys as Array<{ kid: string }>).map((k) => k.kid).sort();
}

describe.skipIf(!databaseUrl || !redisUrl)(
  'two instances sharing one PostgreSQL database and one Redis',
  () => {
    let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
    let smtp: SmtpSink;
    let a: ServiceProcess;
    let b: ServiceProcess;

    beforeAll(async () => {
      database = await createPostgresDatabase(databaseUrl as string);
      smtp = await SmtpSink.start();
      const env = {
        DATABASE_URL: database.url,
        REDIS_URL: redisUrl as string,
        APP_SECRET: newAppSecret(),
        SMTP_URL: smtp.url,
      };
      const [portA, portB] = [await freePort(), await freePort()];
      // Both at the same moment, on an empty database: no pre-migration.
      a = ServiceProcess.spawn(env, portA);
      b = ServiceProcess.spawn(env, portB);
      await Promise.all([a.waitHealthy(), b.waitHealthy()]);
    });

    afterAll(async () => {
      await Promise.all([a?.kill(), b?.kill()]);
      await smtp?.stop();
      await database?.drop();
    });

    it('both instances start together on an empty database and become ready', async () => {
      expect((await a.get('/readyz')).status).toBe(200);
      expect((await b.get('/readyz')).status).toBe(200);
      expect(a.logsMatching(/"level":(50|60)/)).toEqual([]);
      expect(b.logsMatching(/"level":(50|60)/)).toEqual([]);
    });

    it('"Signing keys are shared by every instance": both sign with one key that both publish', async () => {
      const fromA = await a.post('/api/register', {
        email: uniqueEmail(),
        password: STRONG_PASSWORD,
      });
      const fromB = await b.post('/api/register', {
        email: uniqueEmail(),
        password: STRONG_PASSWORD,
      });
      expect([fromA.status, fromB.status]).toEqual([201, 201]);
      const kid = kidOf(fromA.body.access_token);
      expect(kidOf(fromB.body.access_token)).toBe(kid);
      for (const instance of [a, b]) {
        expect(jwksKids(await instance.get('/.well-known/jwks.json'))).toContain(kid);
      }
      // Each instance's token verifies at the other one.
      expect((await b.get('/api/profile', { token: String(fromA.body.access_token) })).status).toBe(
        200,
      );
      expect((await a.get('/api/profile', { token: String(fromB.body.access_token) })).status).toBe(
        200,
      );
    });

    it('a token issued by one instance is accepted by the other', async () => {
      const email = uniqueEmail();
      const registered = await a.post('/api/register', { email, password: STRONG_PASSWORD });
      expect(registered.status).toBe(201);
      const profile = await b.get('/api/profile', { token: String(registered.body.access_token) });
      expect(profile.status).toBe(200);
      expect((profile.body.user as { email: string }).email).toBe(email);

      const refreshed = await b.post('/api/refresh-token', {
        refresh_token: registered.body.refresh_token,
      });
      expect(refreshed.status).toBe(200);
      const again = await a.get('/api/profile', { token: String(refreshed.body.access_token) });
      expect(again.status).toBe(200);
    });

    it('logout on one instance takes effect on the other at once', async () => {
      const registered = await a.post('/api/register', {
        email: uniqueEmail(),
        password: STRONG_PASSWORD,
      });
      const token = String(registered.body.access_token);
      expect((await b.get('/api/profile', { token })).status).toBe(200);
      expect((await a.post('/api/logout', {}, { token })).status).toBe(200);
      const after = await b.get('/api/profile', { token });
      expect(after.status).toBe(401);
      expect(after.body.error).toBe('unauthorized');
    });

    it('failed logins of one address are counted across instances (10 a minute → 429 too_many_attempts)', async () => {
      const email = uniqueEmail();
      expect((await a.post('/api/register', { email, password: STRONG_PASSWORD })).status).toBe(
        201,
      );
      const wrong = { email, password: 'not-the-Password-99' };
      for (const instance of [a, b]) {
        for (let i = 0; i < 5; i++) {
          const reply = await instance.post('/api/login', wrong, { ip: randomIp() });
          expect(reply.status).toBe(401);
        }
      }
      for (const instance of [a, b]) {
        const reply = await instance.post(
          '/api/login',
          { email, password: STRONG_PASSWORD },
          { ip: randomIp() },
        );
        expect(reply.status).toBe(429);
        expect(reply.body.error).toBe('too_many_attempts');
        expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    });

    it('a limit below the threshold on each instance alone is not yet reached (control)', async () => {
      const email = uniqueEmail();
      await a.post('/api/register', { email, password: STRONG_PASSWORD });
      for (let i = 0; i < 5; i++)
        await a.post('/api/login', { email, password: 'wrong-Password-12' }, { ip: randomIp() });
      const reply = await b.post(
        '/api/login',
        { email, password: STRONG_PASSWORD },
        { ip: randomIp() },
      );
      expect(reply.status).toBe(200);
    });
  },
);
