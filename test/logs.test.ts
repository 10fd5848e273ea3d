import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from './helpers/backends.js';
import { randomIp, TestApp, uniqueEmail } from './helpers/test-app.js';

/**
 * API.md: "Secrets never appear in logs: no password, code, token or hash." A whole account's life
 * runs with the app logging at info level; then no secret it used or stored may be in the log.
 */
describe.each(backends)('no secrets in logs ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('a full flow (register, codes, confirm, login, refresh, change and reset password) logs no password, code, token or hash', async () => {
    const secrets = new Set<string>();
    const codes = new Set<string>();
    const keep = (...values: unknown[]) => {
      for (const value of values) {
        expect(typeof value).toBe('string');
        secrets.add(value as string);
      }
    };
    const keepTokens = (body: { access_token: unknown; refresh_token: unknown }) => {
      keep(body.access_token, body.refresh_token);
      // The signature alone, too: a log that trims the header would still leak the token.
      keep((body.access_token as string).split('.')[2]);
    };
    const userRow = () =>
      t.db
        .selectFrom('users')
        .select(['id', 'password_hash'])
        .where('email_normalized', '=', email.toLowerCase())
        .executeTakeFirstOrThrow();
    const keepStoredHashes = async () => {
      const { id, password_hash } = await userRow();
      keep(password_hash, password_hash.split('$').at(-1));
      const rows = await t.db
        .selectFrom('one_time_codes')
        .select('code_hash')
        .where('user_id', '=', id)
        .execute();
      for (const row of rows) keep(row.code_hash);
    };

    const email = uniqueEmail('logs');
    const passwords = [
      'first-Lantern-58-meadow',
      'second-Harbor-73-violet',
      'third-Comet-19-walnut',
    ];
    keep(...passwords);
    const ip = randomIp();
    const post = (url: string, body: unknown, token?: string) =>
      t.post(url, body, { ip, ...(token !== undefined && { token }) });

    // Register: a confirmation code is e-mailed.
    const registered = await post('/api/register', { email, password: passwords[0] });
    expect(registered.statusCode).toBe(201);
    keepTokens(registered.json());
    await keepStoredHashes();
    codes.add(await t.codeFor(email, 1));

    // A second code after the 60 s window; a wrong code; then the right one.
    t.clock.advance(61_000);
    const token = registered.json().access_token;
    expect((await post('/api/send-confirmation-code', { email }, token)).statusCode).toBe(200);
    await keepStoredHashes();
    const confirmation = await t.codeFor(email, 2);
    codes.add(confirmation);
    const wrongCode = confirmation === '000000' ? '111111' : '000000';
    expect((await post('/api/confirm-email', { email, code: wrongCode }, token)).statusCode).toBe(
      400,
    );
    expect(
      (await post('/api/confirm-email', { email, code: confirmation }, token)).statusCode,
    ).toBe(200);

    // Login (a failure first), refresh, and a replay inside the grace period.
    expect(
      (await post('/api/login', { email, password: 'wrong-Guess-11-pepper' })).statusCode,
    ).toBe(401);
    keep('wrong-Guess-11-pepper');
    const login = await post('/api/login', { email, password: passwords[0] });
    expect(login.statusCode).toBe(200);
    keepTokens(login.json());
    const refreshed = await post('/api/refresh-token', {
      refresh_token: login.json().refresh_token,
    });
    expect(refreshed.statusCode).toBe(200);
    keepTokens(refreshed.json());
    const replayed = await post('/api/refresh-token', {
      refresh_token: login.json().refresh_token,
    });
    expect(replayed.statusCode).toBe(200);
    keepTokens(replayed.json());
    const current = refreshed.json().access_token;
    expect((await t.call('GET', '/api/sessions', { ip, token: current })).statusCode).toBe(200);

    // Change password (a wrong current password first).
    expect(
      (
        await post(
          '/api/change-password',
          { password: 'not-Mine-64-falcon', new_password: passwords[1] },
          current,
        )
      ).statusCode,
    ).toBe(400);
    keep('not-Mine-64-falcon');
    expect(
      (
        await post(
          '/api/change-password',
          { password: passwords[0], new_password: passwords[1] },
          current,
        )
      ).statusCode,
    ).toBe(200);
    await keepStoredHashes();
    expect((await t.smtp.waitFor(email, 3)).subject).toBe('Your password was changed');

    // Forgot and reset password (a wrong code first).
    expect((await post('/api/forgot-password', { email })).statusCode).toBe(200);
    await keepStoredHashes();
    const resetCode = await t.codeFor(email, 4);
    codes.add(resetCode);
    const wrongReset = resetCode === '999999' ? '888888' : '999999';
    expect(
      (await post('/api/reset-password', { email, code: wrongReset, new_password: passwords[2] }))
        .statusCode,
    ).toBe(400);
    expect(
      (await post('/api/reset-password', { email, code: resetCode, new_password: passwords[2] }))
        .statusCode,
    ).toBe(200);
    await keepStoredHashes();
    const last = await post('/api/login', { email, password: passwords[2] });
    expect(last.statusCode).toBe(200);
    keepTokens(last.json());

    // Let the outbox deliver the last notification too.
    expect((await t.smtp.waitFor(email, 5)).subject).toBe('Your password was reset');

    const log = t.logs.join('');
    // The log was captured at all: requests and deliveries are in it.
    expect(log).toContain('/api/reset-password');
    expect(log).toMatch(/delivered/);

    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(5);
      expect(log.includes(secret), `secret ${secret.slice(0, 12)}… appears in the log`).toBe(false);
    }
    for (const code of codes) {
      expect(
        new RegExp(`(?<!\\d)${code}(?!\\d)`).test(log),
        `code ${code} appears in the log`,
      ).toBe(false);
    }
  });
});
