// A PostgreSQL that answers but takes no writes: a primary demoted by a failover, or a standby the
// service was pointed at. Its writes answer 503 (the database is away for them), not 500 with a
// stack per request, and /readyz takes the instance out of the balancer.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

const postgres = backends.find((backend) => backend.name.startsWith('postgres'));

describe.skipIf(postgres === undefined)('a read-only PostgreSQL database', () => {
  let t: TestApp;
  let admin: pg.Client;
  let name: string;
  beforeAll(async () => {
    t = await TestApp.start(postgres!);
    const url = new URL(t.backend.env.DATABASE_URL!);
    name = url.pathname.slice(1);
    url.pathname = '/postgres';
    admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.query(`alter database ${name} reset default_transaction_read_only`);
    await admin?.end();
    await t?.close();
  });

  /** Makes the database read-only for the service (idempotent). */
  async function readOnly(): Promise<void> {
    await admin.query(`alter database ${name} set default_transaction_read_only = on`);
    // The service's connections were opened before: they take the setting once opened again.
    await admin.query(
      'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
      [name],
    );
    await expect.poll(async () => (await t.call('GET', '/readyz')).statusCode).toBe(503);
  }

  it('answers writes 503 unavailable, and /readyz 503 with the database down', async () => {
    expect((await t.call('GET', '/readyz')).statusCode).toBe(200);
    await readOnly();
    expect((await t.call('GET', '/readyz')).json()).toMatchObject({
      status: 'unavailable',
      checks: { database: 'down' },
    });
    const registered = await t.post('/api/register', {
      email: uniqueEmail(),
      password: STRONG_PASSWORD,
    });
    expect([registered.statusCode, registered.json().error]).toEqual([503, 'unavailable']);
    expect(t.logs.some((line) => /"request failed"/.test(line))).toBe(false);
  });

  it('logs the outage once, not once per refused write: the reads it answers between do not end it', async () => {
    await readOnly();
    // The outage begins with the first refused write, before these lines are counted.
    const first = await t.post('/api/register', {
      email: uniqueEmail(),
      password: STRONG_PASSWORD,
    });
    expect(first.statusCode).toBe(503);
    const before = t.logs.length;
    for (let i = 0; i < 5; i++) {
      // A read it answers (a login of an unknown address looks it up), then a write it refuses.
      const login = await t.post('/api/login', { email: uniqueEmail(), password: STRONG_PASSWORD });
      expect(login.statusCode).toBe(401);
      const register = await t.post('/api/register', {
        email: uniqueEmail(),
        password: STRONG_PASSWORD,
      });
      expect(register.statusCode).toBe(503);
    }
    const messages = t.logs.slice(before).map((line) => String(JSON.parse(line).msg));
    expect(messages.filter((msg) => /^database is (unavailable|back)/.test(msg))).toEqual([]);
  });
});
