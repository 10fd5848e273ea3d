import type { LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp, uniqueEmail, type Account } from '../helpers/test-app.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const WRONG_PASSWORD = 'not-the-Right-one-55';
const NEW_PASSWORD = 'another-Quiet-harbour-93';

function expectRefused(response: LightMyRequestResponse, error: string, retryAfter: number): void {
  expect(response.statusCode, response.body).toBe(429);
  expect(response.json()).toEqual({ message: expect.any(String), error });
  expect(response.headers['retry-after']).toBe(String(retryAfter));
}

/**
 * Each window pinned at both ends: the clock is frozen, so every event of a test happens at the
 * time the test says; the window ends exactly `windowMs` after the event that opened it.
 */
describe.each(backends)('limit and validity windows at their boundaries ($name)', (backend) => {
  let t: TestApp;
  let frozen: { thaw(): void };
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());
  beforeEach(() => {
    frozen = t.clock.freeze();
  });
  afterEach(() => frozen.thaw());

  const login = (email: string, password: string, ip = randomIp()) =>
    t.post('/api/login', { email, password }, { ip });

  async function failLogins(email: string, count: number, ip = randomIp()): Promise<void> {
    for (let i = 0; i < count; i++) {
      const response = await login(email, WRONG_PASSWORD, ip);
      expect(response.statusCode, `failure #${i + 1}`).toBe(401);
    }
  }

  /**
   * `attempt` is refused with `error` and `Retry-After: seconds`; still refused (`Retry-After: 1`)
   * one second before those seconds have passed, and answered 200 once they have.
   */
  async function expectRefusedFor(
    seconds: number,
    error: string,
    attempt: () => Promise<LightMyRequestResponse>,
  ): Promise<void> {
    expectRefused(await attempt(), error, seconds);
    t.clock.advance((seconds - 1) * SECOND);
    expectRefused(await attempt(), error, 1);
    t.clock.advance(SECOND);
    const after = await attempt();
    expect(after.statusCode, after.body).toBe(200);
  }

  it('"10 failures within a minute": locked out until exactly 60 s after they were counted', async () => {
    const account = await t.register();
    await failLogins(account.email, 10);
    await expectRefusedFor(60, 'too_many_attempts', () => login(account.email, account.password));
  });

  it('"or 100 within an hour": locked out until exactly an hour after the first failure', async () => {
    const account = await t.register();
    // 11 batches of 9 and a last one, a minute and a second apart: never 10 within a minute.
    for (let batch = 0; batch < 12; batch++) {
      await failLogins(account.email, batch < 11 ? 9 : 1);
      t.clock.advance(61 * SECOND);
    }
    await expectRefusedFor((HOUR - 12 * 61 * SECOND) / SECOND, 'too_many_attempts', () =>
      login(account.email, account.password),
    );
  }, 120_000); // 100 hashes in turn

  it('"30 failed logins in a minute" from one IP: rate_limited from it until exactly 60 s later', async () => {
    const account = await t.register();
    const ip = randomIp();
    for (let i = 0; i < 30; i++) await failLogins(uniqueEmail('spray'), 1, ip);
    await expectRefusedFor(60, 'rate_limited', () => login(account.email, account.password, ip));
  });

  it('change-password: "5 wrong current passwords within 15 minutes" refuse the right one until exactly 15 minutes later', async () => {
    const account = await t.register();
    const change = (signedIn: Account, password: string) =>
      t.post(
        '/api/change-password',
        { password, new_password: NEW_PASSWORD },
        { token: signedIn.accessToken },
      );
    for (let i = 0; i < 5; i++) {
      const response = await change(account, `wrong-Current-${i}-x`);
      expect(response.json().error).toBe('incorrect_password');
    }
    // A fresh sign-in each time: the access token lives 15 minutes too.
    await expectRefusedFor(15 * 60, 'too_many_attempts', async () =>
      change(await t.login(account.email, account.password), account.password),
    );
  });

  it('"valid 10 minutes": a confirmation code still confirms 1 s before they have passed', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    t.clock.advance(10 * MINUTE - SECOND);
    const confirm = await t.post('/api/confirm-email', { email: account.email, code });
    expect(confirm.statusCode, confirm.body).toBe(200);
  });

  it('"valid 10 minutes": a confirmation code no longer confirms once exactly 10 minutes have passed', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    t.clock.advance(10 * MINUTE);
    const confirm = await t.post('/api/confirm-email', { email: account.email, code });
    expect(confirm.statusCode, confirm.body).toBe(400);
    expect(confirm.json().error).toBe('invalid_code');
  });

  it('refresh grace: a rotated token gets the current one 9.9 s after its rotation, and revokes the session 10.001 s after', async () => {
    const account = await t.register();
    const refresh = (refreshToken: string) =>
      t.post('/api/refresh-token', { refresh_token: refreshToken }, { ip: randomIp() });
    const rotated = (await refresh(account.refreshToken)).json();

    t.clock.advance(9_900);
    const replay = await refresh(account.refreshToken);
    expect(replay.statusCode, replay.body).toBe(200);
    expect(replay.json().refresh_token).toBe(rotated.refresh_token);

    t.clock.advance(101);
    const late = await refresh(account.refreshToken);
    expect(late.statusCode).toBe(401);
    expect(late.json().error).toBe('invalid_refresh_token');
    expect((await refresh(rotated.refresh_token)).statusCode).toBe(401);
    const sessions = await t.call('GET', '/api/sessions', { token: rotated.access_token });
    expect(sessions.statusCode).toBe(401);
  });
});
