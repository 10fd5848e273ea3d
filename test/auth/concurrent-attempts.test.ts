import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

const countBy = (statuses: number[]) =>
  statuses.reduce<Record<number, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});

/** Limits must hold for attempts that arrive together, while their hashes are still running. */
describe.each(backends)('limits under concurrent attempts ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('lets at most 10 of 25 concurrent wrong logins for one address through to the password check', async () => {
    const account = await t.register();
    const responses = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        t.post(
          '/api/login',
          { email: account.email, password: `wrong-Guess-${i}-x` },
          { ip: randomIp() },
        ),
      ),
    );
    const counts = countBy(responses.map((r) => r.statusCode));
    expect(counts[401]).toBe(10);
    expect(counts[429]).toBe(15);
  });

  it('lets at most 30 concurrent failed logins from one IP through, across addresses', async () => {
    const ip = randomIp();
    const responses = await Promise.all(
      Array.from({ length: 36 }, (_, i) =>
        t.post('/api/login', { email: uniqueEmail(`ip${i}`), password: STRONG_PASSWORD }, { ip }),
      ),
    );
    const counts = countBy(responses.map((r) => r.statusCode));
    expect(counts[401]).toBe(30);
    expect(counts[429]).toBe(6);
  });

  it('a right password among concurrent logins does not use up a failure slot', async () => {
    const account = await t.register();
    const right = await Promise.all(
      Array.from({ length: 5 }, () =>
        t.post(
          '/api/login',
          { email: account.email, password: STRONG_PASSWORD },
          { ip: randomIp() },
        ),
      ),
    );
    expect(right.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200]);
    const wrong = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        t.post(
          '/api/login',
          { email: account.email, password: `wrong-Guess-${i}-x` },
          { ip: randomIp() },
        ),
      ),
    );
    expect(wrong.every((r) => r.statusCode === 401)).toBe(true);
  });

  it('lets at most 5 of 12 concurrent wrong current passwords through (change-password)', async () => {
    const account = await t.register();
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.post(
          '/api/change-password',
          { password: `wrong-Current-${i}-x`, new_password: 'another-Quiet-harbour-93' },
          { token: account.accessToken },
        ),
      ),
    );
    const counts = countBy(responses.map((r) => r.statusCode));
    expect(counts[400]).toBe(5);
    expect(counts[429]).toBe(7);
  });
});
