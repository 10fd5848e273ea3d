import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp, type Account } from '../helpers/test-app.js';

const NEW_PASSWORD = 'another-Quiet-harbour-93';
const LOCKOUT_WINDOW_MS = 15 * 60_000;

function expectError(response: LightMyRequestResponse, status: number, error: string): void {
  expect(response.statusCode).toBe(status);
  expect(response.json()).toEqual({ message: expect.any(String), error });
}

function expectWeakNewPassword(response: LightMyRequestResponse): void {
  expect(response.statusCode).toBe(400);
  const body = response.json();
  expect(body).toMatchObject({ message: expect.any(String), error: 'weak_password' });
  expect(body.details.length).toBeGreaterThan(0);
  for (const problem of body.details)
    expect(problem).toEqual({ field: 'new_password', message: expect.any(String) });
}

describe.each(backends)('POST /api/change-password ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const change = (account: Account, password: string, newPassword: string) =>
    t.post(
      '/api/change-password',
      { password, new_password: newPassword },
      { token: account.accessToken },
    );

  const loginStatus = async (email: string, password: string) =>
    (await t.post('/api/login', { email, password }, { ip: randomIp() })).statusCode;

  describe('bearer token', () => {
    it('401 unauthorized with WWW-Authenticate: Bearer without a token', async () => {
      const response = await t.post('/api/change-password', {
        password: STRONG_PASSWORD,
        new_password: NEW_PASSWORD,
      });
      expectError(response, 401, 'unauthorized');
      expect(response.headers['www-authenticate']).toBe('Bearer');
    });

    it('401 unauthorized with WWW-Authenticate: Bearer for an invalid token', async () => {
      const account = await t.register();
      const response = await t.post(
        '/api/change-password',
        { password: STRONG_PASSWORD, new_password: NEW_PASSWORD },
        { token: `${account.accessToken}x` },
      );
      expectError(response, 401, 'unauthorized');
      expect(response.headers['www-authenticate']).toBe('Bearer');
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
    });
  });

  describe('success', () => {
    it('answers 200 {"message":"User changed password successful"}; the new password logs in, the old one no longer', async () => {
      const account = await t.register();
      const response = await change(account, STRONG_PASSWORD, NEW_PASSWORD);
      expect(response.statusCode).toBe(200);
      expect(response.body).toBe('{"message":"User changed password successful"}');
      expect(await loginStatus(account.email, NEW_PASSWORD)).toBe(200);
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(401);
    });

    it('"every other session of the user is revoked"; the calling session keeps working', async () => {
      const account = await t.register();
      const other = await t.login(account.email, STRONG_PASSWORD);
      expect((await change(account, STRONG_PASSWORD, NEW_PASSWORD)).statusCode).toBe(200);

      const otherProfile = await t.call('GET', '/api/profile', { token: other.accessToken });
      expectError(otherProfile, 401, 'unauthorized');
      const otherRefresh = await t.post('/api/refresh-token', {
        refresh_token: other.refreshToken,
      });
      expectError(otherRefresh, 401, 'invalid_refresh_token');

      const ownProfile = await t.call('GET', '/api/profile', { token: account.accessToken });
      expect(ownProfile.statusCode).toBe(200);
      const ownRefresh = await t.post('/api/refresh-token', {
        refresh_token: account.refreshToken,
      });
      expect(ownRefresh.statusCode).toBe(200);
    });

    it('a reset code asked for before the change no longer resets the password', async () => {
      const account = await t.register();
      await t.smtp.waitFor(account.email, 1);
      t.clock.advance(61_000); // past the registration code's one-a-minute window
      expect((await t.post('/api/forgot-password', { email: account.email })).statusCode).toBe(200);
      const code = await t.codeFor(account.email, 2);
      expect((await change(account, STRONG_PASSWORD, NEW_PASSWORD)).statusCode).toBe(200);
      const reset = await t.post('/api/reset-password', {
        email: account.email,
        code,
        new_password: 'a-third-Quiet-harbour-94',
      });
      expectError(reset, 400, 'invalid_code');
      expect(await loginStatus(account.email, NEW_PASSWORD)).toBe(200);
    });

    it('"a notification e-mail is sent": "Your password was changed"', async () => {
      const account = await t.register();
      await t.smtp.waitFor(account.email, 1);
      expect((await change(account, STRONG_PASSWORD, NEW_PASSWORD)).statusCode).toBe(200);
      const mail = await t.smtp.waitFor(account.email, 2);
      expect(mail.subject).toBe('Your password was changed');
      expect(mail.raw).not.toContain(NEW_PASSWORD);
    });

    it('passwords are normalised to NFC: set with a composed "é", log in with "e\\u0301"', async () => {
      const account = await t.register();
      const composed = 'caf\u00e9-Tractor-47-\u00e9t\u00e9';
      const decomposed = 'cafe\u0301-Tractor-47-e\u0301te\u0301';
      expect((await change(account, STRONG_PASSWORD, composed)).statusCode).toBe(200);
      expect(await loginStatus(account.email, decomposed)).toBe(200);
    });
  });

  describe('refusals', () => {
    it('400 incorrect_password for a wrong current password; nothing changes', async () => {
      const account = await t.register();
      const response = await change(account, 'not-the-Current-one-1', NEW_PASSWORD);
      expectError(response, 400, 'incorrect_password');
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
      expect(await loginStatus(account.email, NEW_PASSWORD)).toBe(401);
    });

    it('400 incorrect_password for an overlong current password, like any wrong one', async () => {
      const account = await t.register();
      const response = await change(account, 'Zq7'.repeat(1500), NEW_PASSWORD);
      expectError(response, 400, 'incorrect_password');
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
    });

    it('checks the current password before the new one: wrong current + weak new is incorrect_password', async () => {
      const account = await t.register();
      expectError(
        await change(account, 'not-the-Current-one-1', 'short'),
        400,
        'incorrect_password',
      );
    });

    it.each([
      ['too short (7 code points)', 'Zq7-abc'],
      ['too long (129 code points)', 'Zq7'.repeat(43)],
      ['a common password ("password123")', 'password123'],
      ['a common password ("iloveyou12")', 'iloveyou12'],
    ])('400 weak_password with details on new_password: %s', async (_rule, weak) => {
      const account = await t.register();
      expectWeakNewPassword(await change(account, STRONG_PASSWORD, weak));
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
    });

    it('400 weak_password when the new password equals the e-mail address or its local part', async () => {
      const account = await t.register();
      const localPart = account.email.slice(0, account.email.indexOf('@'));
      expectWeakNewPassword(await change(account, STRONG_PASSWORD, account.email));
      expectWeakNewPassword(await change(account, STRONG_PASSWORD, localPart));
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
    });

    it('a 128-code-point new password is accepted (upper bound inclusive)', async () => {
      const account = await t.register();
      const longest = 'Zq7'.repeat(42) + 'Zq';
      expect([...longest]).toHaveLength(128);
      expect((await change(account, STRONG_PASSWORD, longest)).statusCode).toBe(200);
    });

    it('400 weak_password for a new password far over 128 code points too', async () => {
      const account = await t.register();
      for (const length of [129, 4097, 8000])
        expectWeakNewPassword(await change(account, STRONG_PASSWORD, 'Zq7'.repeat(length / 3 + 1)));
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
    });

    it('400 same_password when the new password equals the current one', async () => {
      const account = await t.register();
      expectError(await change(account, STRONG_PASSWORD, STRONG_PASSWORD), 400, 'same_password');
    });

    it('400 same_password when the new password is the current one in another Unicode form (NFC)', async () => {
      const composed = 'caf\u00e9-Tractor-47-\u00e9t\u00e9';
      const decomposed = 'cafe\u0301-Tractor-47-e\u0301te\u0301';
      const account = await t.register(undefined, composed);
      expectError(await change(account, composed, decomposed), 400, 'same_password');
    });
  });

  describe('lockout: 5 wrong current passwords within 15 minutes', () => {
    const giveWrongPasswords = async (account: Account, count: number, next = NEW_PASSWORD) => {
      for (let i = 0; i < count; i++) {
        expectError(await change(account, `wrong-Current-${i}-x`, next), 400, 'incorrect_password');
      }
    };

    it('refuses the 6th call with 429 too_many_attempts and Retry-After, even with the right password', async () => {
      const account = await t.register();
      await giveWrongPasswords(account, 5);
      const locked = await change(account, STRONG_PASSWORD, NEW_PASSWORD);
      expectError(locked, 429, 'too_many_attempts');
      const retryAfter = Number(locked.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(15 * 60);
      expect(await loginStatus(account.email, NEW_PASSWORD)).toBe(401);
    });

    it('lets the right password through once the window has passed', async () => {
      const account = await t.register();
      await giveWrongPasswords(account, 5);
      t.clock.advance(LOCKOUT_WINDOW_MS + 1_000);
      // The access token (15 minutes) expired meanwhile: sign in again.
      const fresh = await t.login(account.email, STRONG_PASSWORD);
      expect((await change(fresh, STRONG_PASSWORD, NEW_PASSWORD)).statusCode).toBe(200);
    });

    it('"a successful change clears the count": 4 wrong, 1 right, 4 wrong more is still not locked', async () => {
      const account = await t.register();
      await giveWrongPasswords(account, 4);
      expect((await change(account, STRONG_PASSWORD, NEW_PASSWORD)).statusCode).toBe(200);
      await giveWrongPasswords(account, 4, STRONG_PASSWORD);
      expect((await change(account, NEW_PASSWORD, STRONG_PASSWORD)).statusCode).toBe(200);
    });
  });

  it('an 11th check of the current password within a minute, right ones included, is 429 rate_limited (deletion shares the budget)', async () => {
    const account = await t.register();
    // The right password each time, a new one the policy refuses: each check costs a hash.
    for (let i = 0; i < 9; i++)
      expectWeakNewPassword(await change(account, STRONG_PASSWORD, 'password'));
    const wrongDeletion = await t.call('DELETE', '/api/profile', {
      token: account.accessToken,
      body: { password: 'not-the-Password-42' },
    });
    expectError(wrongDeletion, 400, 'incorrect_password');
    const refused = await change(account, STRONG_PASSWORD, NEW_PASSWORD);
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    t.clock.advance(61_000);
    expect((await change(account, STRONG_PASSWORD, NEW_PASSWORD)).statusCode).toBe(200);
  });

  it('"two concurrent changes of the same password succeed at most once"', async () => {
    const account = await t.register();
    const candidates = ['first-Quiet-harbour-93', 'second-Loud-meadow-57'];
    const responses = await Promise.all(
      candidates.map((next) => change(account, STRONG_PASSWORD, next)),
    );
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 400]);
    const loser = responses.findIndex((r) => r.statusCode === 400);
    expectError(responses[loser]!, 400, 'incorrect_password');
    const logins = await Promise.all(candidates.map((next) => loginStatus(account.email, next)));
    expect(logins).toEqual(candidates.map((_, i) => (i === loser ? 401 : 200)));
  });
});
