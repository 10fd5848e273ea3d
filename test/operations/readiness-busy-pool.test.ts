// Readiness says whether PostgreSQL answers, not whether the request pool has a free connection:
// a busy instance (every pooled connection in use) stays in the load balancer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { LockHolder } from '../helpers/lock-waits.js';
import { TestApp } from '../helpers/test-app.js';

const postgres = backends.find((backend) => backend.name.startsWith('postgres'));
if (!postgres)
  console.warn('TEST_DATABASE_URL not set: skipping test/operations/readiness-busy-pool.');

describe.skipIf(!postgres)('GET /readyz while every pooled connection is busy', () => {
  let t: TestApp;
  let holder: LockHolder;
  beforeAll(async () => {
    t = await TestApp.start(postgres!, { env: { DATABASE_POOL_SIZE: '1' } });
    holder = await LockHolder.connect(t.backend.env.DATABASE_URL as string);
  });
  afterAll(async () => {
    await holder.end();
    await t.close();
  });

  it('answers 200 ok: it asks on a connection of its own', async () => {
    const account = await t.register();
    // The pool's only connection waits for a row lock held elsewhere, with a request on it.
    await holder.hold('select id from users where id = $1 for update', [account.userId]);
    const waiting = t.call('PATCH', '/api/profile', {
      token: account.accessToken,
      body: { name: 'Busy' },
    });
    await holder.untilWaiting('update');
    const ready = await t.call('GET', '/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ status: 'ok', checks: { database: 'up' } });
    await holder.release();
    expect((await waiting).statusCode).toBe(200);
  });
});
