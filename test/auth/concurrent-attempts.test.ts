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

/** "5 wrong tries burn it" must hold for guesses that arrive together. */
describe.each(backends)('code guesses under concurrency ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const GUESSES = 40;
  const wrongCode = (code: string, offset: number) =>
    String((Number(code) + offset) % 1_000_000).padStart(6, '0');

  const purposes = [
    {
      purpose: 'confirm_email',
      /** Registers an account; its registration e-mail carries the code. */
      async accountWithCode() {
        const account = await t.register();
        return { account, code: await t.codeFor(account.email) };
      },
      guess: (email: string, code: string) =>
        t.post('/api/confirm-email', { email, code }, { ip: randomIp() }),
    },
    {
      purpose: 'reset_password',
      async accountWithCode() {
        const account = await t.register();
        await t.codeFor(account.email, 1);
        const forgot = await t.post('/api/forgot-password', { email: account.email });
        expect(forgot.statusCode).toBe(200);
        return { account, code: await t.codeFor(account.email, 2) };
      },
      guess: (email: string, code: string) =>
        t.post(
          '/api/reset-password',
          { email, code, new_password: 'another-Quiet-harbour-93' },
          { ip: randomIp() },
        ),
    },
  ] as const;

  const storedTries = async (userId: string, purpose: string) =>
    (
      await t.db
        .selectFrom('one_time_codes')
        .select('failed_attempts')
        .where('user_id', '=', userId)
        .where('purpose', '=', purpose as 'confirm_email')
        .executeTakeFirst()
    )?.failed_attempts;

  it.each(purposes)(
    '$purpose: 40 concurrent wrong guesses take exactly five tries; the burnt code, still stored, never verifies',
    async ({ purpose, accountWithCode, guess }) => {
      const { account, code } = await accountWithCode();
      const responses = await Promise.all(
        Array.from({ length: GUESSES }, (_, i) => guess(account.email, wrongCode(code, i + 1))),
      );
      expect(countBy(responses.map((r) => r.statusCode))).toEqual({ 400: GUESSES });
      expect(responses.every((r) => r.json().error === 'invalid_code')).toBe(true);
      // Burnt by the count itself: the row is still there (the sweep deletes it later).
      expect(await storedTries(account.userId, purpose)).toBe(5);
      expect((await guess(account.email, code)).json().error).toBe('invalid_code');
      expect(await storedTries(account.userId, purpose)).toBe(5);
    },
  );

  it.each(purposes)(
    '$purpose: the right code behind 39 wrong ones in one burst is refused (only five guesses are compared)',
    async ({ purpose, accountWithCode, guess }) => {
      const { account, code } = await accountWithCode();
      const wrong = Array.from({ length: GUESSES - 1 }, (_, i) => wrongCode(code, i + 1));
      const responses = await Promise.all([...wrong, code].map((c) => guess(account.email, c)));
      expect(countBy(responses.map((r) => r.statusCode))).toEqual({ 400: GUESSES });
      expect(await storedTries(account.userId, purpose)).toBe(5);
      const login = await t.post('/api/login', {
        email: account.email,
        password: STRONG_PASSWORD,
      });
      expect(login.statusCode).toBe(200);
      expect(login.json().user.email_confirmed).toBe(false);
    },
  );
});
