import { randomBytes } from 'node:crypto';
import { hash } from '@node-rs/argon2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import {
  randomIp,
  STRONG_PASSWORD,
  TestApp,
  uniqueEmail,
  USER_FIELDS,
} from '../helpers/test-app.js';

const SIGNED_IN_FIELDS = [
  'access_token',
  'expires_in',
  'message',
  'refresh_token',
  'token_type',
  'user',
];
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const WRONG_PASSWORD = 'not-the-Right-one-55';

/** A valid address of exactly `length` characters (domain labels stay under 63 characters). */
function emailOfLength(length: number): string {
  const local = `len.${randomBytes(4).toString('hex')}`;
  let domain = 'example.test';
  while (local.length + 1 + domain.length < length) {
    const room = length - (local.length + 1 + domain.length) - 1;
    domain = `${'d'.repeat(Math.min(50, Math.max(1, room)))}.${domain}`;
  }
  return `${local}@${domain}`;
}

describe.each(backends)('POST /api/register ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const register = (body: Record<string, unknown>) =>
    t.post('/api/register', body, { ip: randomIp() });

  it('answers 201 {message:"User registered", user, ...token response}', async () => {
    const email = uniqueEmail();
    const response = await register({ email, password: STRONG_PASSWORD });
    expect(response.statusCode).toBe(201);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(SIGNED_IN_FIELDS);
    expect(body.message).toBe('User registered');
    expect(body.token_type).toBe('Bearer');
    expect(body.expires_in).toBe(900);
    expect(body.access_token).toEqual(expect.any(String));
    expect(body.refresh_token).toEqual(expect.any(String));
    expect(Object.keys(body.user).sort()).toEqual(USER_FIELDS);
    expect(body.user).toMatchObject({
      email,
      email_confirmed: false,
      name: null,
      bio: null,
      avatar_url: null,
    });
    expect(body.user.id).toMatch(UUID);
    expect(body.user.created_at).toMatch(ISO_UTC);
    expect(body.user.updated_at).toMatch(ISO_UTC);
    expect(response.body).not.toContain('argon2');
    // The new user is signed in: the access token works at once.
    const profile = await t.call('GET', '/api/profile', { token: body.access_token });
    expect(profile.statusCode).toBe(200);
  });

  it('e-mails a confirmation code of 6 decimal digits to the new address', async () => {
    const account = await t.register();
    const mail = await t.smtp.waitFor(account.email);
    expect(mail.to.map((a) => a.toLowerCase())).toEqual([account.email.toLowerCase()]);
    expect(mail.code).toMatch(/^\d{6}$/);
  });

  it('stores the e-mail as given (trimmed) and compares it lower-cased', async () => {
    const given = `Mixed.Case.${randomBytes(4).toString('hex')}@Example.TEST`;
    const response = await register({ email: `  ${given}\t`, password: STRONG_PASSWORD });
    expect(response.statusCode).toBe(201);
    expect(response.json().user.email).toBe(given);
    const row = await t.db
      .selectFrom('users')
      .select('email')
      .where('id', '=', response.json().user.id)
      .executeTakeFirstOrThrow();
    expect(row.email).toBe(given);
  });

  it.each([
    ['the same address', (e: string) => e],
    ['different letter case', (e: string) => e.toUpperCase()],
    ['surrounding spaces', (e: string) => `  ${e}  `],
    ['case and spaces together', (e: string) => ` ${e.replace(/^./, (c) => c.toUpperCase())} `],
  ])('answers 409 email_taken for an address already registered (%s)', async (_, variant) => {
    const account = await t.register();
    const response = await register({ email: variant(account.email), password: STRONG_PASSWORD });
    expect(response.statusCode).toBe(409);
    const body = response.json();
    expect(body).toEqual({ message: expect.any(String), error: 'email_taken' });
    const rows = await t.db
      .selectFrom('users')
      .select('id')
      .where('email_normalized', '=', account.email.toLowerCase())
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('two concurrent registrations of one address: one 201, one 409 email_taken', async () => {
    const email = uniqueEmail('twice');
    const passwords = [STRONG_PASSWORD, 'another-Quiet-harbour-93'];
    const responses = await Promise.all([
      register({ email, password: passwords[0] }),
      register({ email: email.toUpperCase(), password: passwords[1] }),
    ]);
    expect(responses.map((r) => r.statusCode).sort()).toEqual([201, 409]);
    const loser = responses.findIndex((r) => r.statusCode === 409);
    expect(responses[loser]!.json()).toEqual({ message: expect.any(String), error: 'email_taken' });
    const rows = await t.db
      .selectFrom('users')
      .select('id')
      .where('email_normalized', '=', email.toLowerCase())
      .execute();
    expect(rows).toHaveLength(1);
    const logins = await Promise.all(
      passwords.map((password) => t.post('/api/login', { email, password }, { ip: randomIp() })),
    );
    expect(logins.map((r) => r.statusCode)).toEqual(
      passwords.map((_, i) => (i === loser ? 401 : 200)),
    );
  });

  it.each(['/api/send-confirmation-code', '/api/forgot-password'])(
    '"the registration e-mail is always sent": also inside a 60 s window that %s opened before the address was registered',
    async (url) => {
      const email = uniqueEmail('early');
      expect((await t.post(url, { email }, { ip: randomIp() })).statusCode).toBe(200);
      expect((await register({ email, password: STRONG_PASSWORD })).statusCode).toBe(201);
      const mail = await t.smtp.waitFor(email);
      expect(mail.subject).toBe('Your confirmation code');
      const again = await t.post('/api/send-confirmation-code', { email }, { ip: randomIp() });
      expect(again.statusCode).toBe(429);
      const confirm = await t.post('/api/confirm-email', { email, code: mail.code });
      expect(confirm.statusCode).toBe(200);
      // No other e-mail: a mail enqueued later (the barrier) arrives with nothing more for `email`.
      const barrier = await t.register();
      await t.smtp.waitFor(barrier.email);
      expect(t.smtp.mailsTo(email)).toHaveLength(1);
    },
  );

  it.each([
    ['no @', () => `no-at.${randomBytes(4).toString('hex')}.example.test`],
    ['two @', () => `two@at@${randomBytes(4).toString('hex')}.example.test`],
    ['no dot in the domain', () => `nodot.${randomBytes(4).toString('hex')}@localhost`],
    ['an empty local part', () => `@${randomBytes(4).toString('hex')}.example.test`],
    ['more than 254 characters', () => emailOfLength(255)],
    ['a control character', () => `ctl\u0001${randomBytes(4).toString('hex')}@example.test`],
    ['a newline', () => `nl${randomBytes(4).toString('hex')}@exam\nple.test`],
  ])('answers 400 validation_failed with details field "email" for %s', async (_, makeEmail) => {
    const email = makeEmail();
    const response = await register({ email, password: STRONG_PASSWORD });
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expect(body.error).toBe('validation_failed');
    expect(body.message).toEqual(expect.any(String));
    expect(body.details).toEqual(
      expect.arrayContaining([{ field: 'email', message: expect.any(String) }]),
    );
    const rows = await t.db.selectFrom('users').select('id').where('email', '=', email).execute();
    expect(rows).toHaveLength(0);
  });

  // U+212A KELVIN SIGN lower-cases to "k": "\u212Aate@x.test" was stored as given, compared as
  // "kate@x.test", so it took that address from its owner (409 email_taken), and a reset for it
  // mailed the code to the stored look-alike, not to the owner. Squatting any address with a "k".
  it('refuses an address with a character that lower-cases into an ASCII letter (K, the Kelvin sign)', async () => {
    const owner = `kate.${randomBytes(4).toString('hex')}@example.test`;
    const squatted = await register({
      email: owner.replace('k', '\u212A'),
      password: STRONG_PASSWORD,
    });
    expect(squatted.statusCode).toBe(400);
    expect(squatted.json()).toMatchObject({
      error: 'validation_failed',
      details: [{ field: 'email' }],
    });
    expect((await register({ email: owner, password: STRONG_PASSWORD })).statusCode).toBe(201);
  });

  // The SMTP library reads an address as a list with display names: "owner<other@x.test>" was
  // stored as given while its confirmation code went to other@x.test, and "a,b@x.test" went to two
  // recipients. A mailbox needs none of these characters outside quotes.
  it('refuses an address with a character that a mail library reads as a list or a display name', async () => {
    const tag = randomBytes(4).toString('hex');
    for (const email of [
      `owner<other.${tag}@example.test>`,
      `a,b.${tag}@example.test`,
      `"a b".${tag}@example.test`,
      `a;${tag}@example.test`,
      `a(${tag})@example.test`,
      `a.${tag}@[127.0.0.1]`,
      `a\\b.${tag}@example.test`,
      `a.${tag}@exa:mple.test`,
    ]) {
      const response = await register({ email, password: STRONG_PASSWORD });
      expect([email, response.statusCode, response.json().error]).toEqual([
        email,
        400,
        'validation_failed',
      ]);
    }
    for (const email of [`o'brien+${tag}@example.test`, `josé.${tag}@exämple.test`]) {
      expect([email, (await register({ email, password: STRONG_PASSWORD })).statusCode]).toEqual([
        email,
        201,
      ]);
    }
  });

  it('an account whose address an earlier rule allowed still signs in', async () => {
    const account = await t.register();
    const earlier = `owner<${randomBytes(4).toString('hex')}@example.test>`;
    await t.db
      .updateTable('users')
      .set({ email: earlier, email_normalized: earlier })
      .where('id', '=', account.userId)
      .execute();
    const response = await t.post('/api/login', { email: earlier, password: STRONG_PASSWORD });
    expect(response.statusCode).toBe(200);
  });

  it('accepts an address of exactly 254 characters', async () => {
    const email = emailOfLength(254);
    expect(email).toHaveLength(254);
    const response = await register({ email, password: STRONG_PASSWORD });
    expect(response.statusCode).toBe(201);
  });

  it('accepts an address of 254 characters whose lower-cased form is longer (İ), and signs it in', async () => {
    const email = `${'İ'.repeat(20)}${emailOfLength(234)}`;
    expect(email).toHaveLength(254);
    expect(email.toLowerCase()).toHaveLength(274);
    const response = await register({ email, password: STRONG_PASSWORD });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().user.email).toBe(email);
    const login = await t.post(
      '/api/login',
      { email, password: STRONG_PASSWORD },
      { ip: randomIp() },
    );
    expect(login.statusCode, login.body).toBe(200);
    const again = await register({ email: email.toUpperCase(), password: STRONG_PASSWORD });
    expect(again.statusCode, again.body).toBe(409);
  });

  it('"trimmed; at most 254 characters": any amount of white space around the address is trimmed first', async () => {
    const email = emailOfLength(254);
    const response = await register({
      email: `${' '.repeat(900)}${email}\t\n `,
      password: STRONG_PASSWORD,
    });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().user.email).toBe(email);
    const longer = await register({
      email: `${' '.repeat(900)}${emailOfLength(255)}`,
      password: STRONG_PASSWORD,
    });
    expect(longer.statusCode).toBe(400);
    expect(longer.json().error).toBe('validation_failed');
  });

  it.each([
    ['shorter than 8 characters', () => 'Ab3-xyz'],
    ['longer than 128 characters', () => 'long-Word-'.repeat(13)],
    ['a common password', () => 'password123'],
    ['the e-mail address itself', (email: string) => email],
    ['the local part of the e-mail', (email: string) => email.slice(0, email.indexOf('@'))],
  ])('answers 400 weak_password with details for a password that is %s', async (_, makePw) => {
    const email = uniqueEmail('kestrel-owner');
    const response = await register({ email, password: makePw(email) });
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expect(body.error).toBe('weak_password');
    expect(body.details.length).toBeGreaterThan(0);
    for (const detail of body.details) {
      expect(detail).toEqual({ field: 'password', message: expect.any(String) });
    }
    const login = await t.post(
      '/api/login',
      { email, password: makePw(email) },
      { ip: randomIp() },
    );
    expect(login.statusCode).toBe(401);
  });

  it('"any rule broken answers 400 weak_password": a password far over 128 code points too', async () => {
    for (const length of [129, 4097, 8000]) {
      const response = await register({
        email: uniqueEmail(),
        password: 'Zq7'.repeat(length / 3 + 1),
      });
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json()).toMatchObject({
        error: 'weak_password',
        details: [{ field: 'password', message: expect.any(String) }],
      });
    }
  });

  it('takes an optional name, which the user object carries', async () => {
    const email = uniqueEmail();
    const response = await register({ email, password: STRONG_PASSWORD, name: 'Ada Lovelace' });
    expect(response.statusCode).toBe(201);
    expect(response.json().user.name).toBe('Ada Lovelace');
    const row = await t.db
      .selectFrom('users')
      .select('name')
      .where('id', '=', response.json().user.id)
      .executeTakeFirstOrThrow();
    expect(row.name).toBe('Ada Lovelace');
  });

  it('refuses a name that shows nothing or reorders itself, and registers nobody', async () => {
    for (const name of ['\u200b\u200d', 'Ada\u202e']) {
      const email = uniqueEmail();
      const response = await register({ email, password: STRONG_PASSWORD, name });
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json().details).toEqual([{ field: 'name', message: expect.any(String) }]);
      const rows = await t.db.selectFrom('users').select('id').where('email', '=', email).execute();
      expect(rows).toEqual([]);
    }
  });
});

describe.each(backends)('POST /api/login ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const login = (email: string, password: string, ip = randomIp()) =>
    t.post('/api/login', { email, password }, { ip });

  /** How many argon2 verifications the service has run (its own metric). */
  async function verifyCount(): Promise<number> {
    const metrics = await t.call('GET', '/metrics');
    const match = /^password_hash_duration_seconds_count\{operation="verify"\} (\d+)$/m.exec(
      metrics.body,
    );
    return match ? Number(match[1]) : 0;
  }

  /** `count` failed logins for `email`, each answered 401 invalid_credentials. */
  async function failLogins(email: string, count: number, ip = randomIp()): Promise<void> {
    for (let i = 0; i < count; i++) {
      const response = await login(email, WRONG_PASSWORD, ip);
      expect(response.statusCode, `failure #${i + 1}`).toBe(401);
      expect(response.json().error).toBe('invalid_credentials');
    }
  }

  function expectRetryAfter(response: { headers: Record<string, unknown> }, max: number): number {
    const retryAfter = Number(response.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(max);
    return retryAfter;
  }

  it('answers 200 {message:"Login successful", user, ...token response}', async () => {
    const account = await t.register();
    const response = await login(account.email, account.password);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(SIGNED_IN_FIELDS);
    expect(body.message).toBe('Login successful');
    expect(body.token_type).toBe('Bearer');
    expect(body.expires_in).toBe(900);
    expect(Object.keys(body.user).sort()).toEqual(USER_FIELDS);
    expect(body.user.id).toBe(account.userId);
    expect(body.user.email).toBe(account.email);
    expect(body.refresh_token).not.toBe(account.refreshToken);
    expect(response.body).not.toContain('argon2');
    const profile = await t.call('GET', '/api/profile', { token: body.access_token });
    expect(profile.statusCode).toBe(200);
  });

  it('an overlong address or password, or a control character in the address, is just a wrong one: the same 401 invalid_credentials', async () => {
    const account = await t.register();
    const wrong = await login(account.email, WRONG_PASSWORD);
    expect(wrong.statusCode).toBe(401);
    for (const [email, password] of [
      [account.email, 'Zq7'.repeat(1500)],
      [`${'a'.repeat(1100)}@example.test`, account.password],
      // PostgreSQL refuses a NUL in a query: it must not get that far (it answered 400).
      [`${account.email}\u0000`, account.password],
      [`a\u0007${account.email}`, account.password],
    ] as const) {
      const response = await login(email, password);
      expect(response.statusCode, response.body).toBe(401);
      expect(response.body).toBe(wrong.body);
    }
  });

  it('allows login before the e-mail is confirmed', async () => {
    const account = await t.register();
    const response = await login(account.email, account.password);
    expect(response.statusCode).toBe(200);
    expect(response.json().user.email_confirmed).toBe(false);
  });

  it('compares the e-mail case-insensitively (and trims it)', async () => {
    const account = await t.register();
    const response = await login(`  ${account.email.toUpperCase()} `, account.password);
    expect(response.statusCode).toBe(200);
    expect(response.json().user.id).toBe(account.userId);
  });

  it('gives unknown e-mail and wrong password byte-identical 401 bodies, each after one argon2 verify', async () => {
    const account = await t.register();

    const beforeUnknown = await verifyCount();
    const unknown = await login(uniqueEmail('nobody'), account.password);
    const afterUnknown = await verifyCount();

    const wrong = await login(account.email, WRONG_PASSWORD);
    const afterWrong = await verifyCount();

    expect(unknown.statusCode).toBe(401);
    expect(wrong.statusCode).toBe(401);
    expect(unknown.json().error).toBe('invalid_credentials');
    expect(unknown.body).toBe(wrong.body);
    expect(unknown.headers['content-type']).toBe(wrong.headers['content-type']);
    // "similar timing": both paths run exactly one verification (a dummy hash for the unknown one).
    expect(afterUnknown - beforeUnknown).toBe(1);
    expect(afterWrong - afterUnknown).toBe(1);
  });

  it('after 10 failures within a minute answers 429 too_many_attempts, the right password included, until the window passes', async () => {
    const account = await t.register();
    await failLogins(account.email, 10);
    const locked = await login(account.email, account.password);
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error).toBe('too_many_attempts');
    expectRetryAfter(locked, 60);

    t.clock.advance(61_000);
    const after = await login(account.email, account.password);
    expect(after.statusCode).toBe(200);
  }, 120_000); // ~100 hashes in turn, on a machine the other test files load too

  it('counts failures for an unregistered address the same way (a limit never reveals whether it exists)', async () => {
    const registered = await t.register();
    const unregistered = uniqueEmail('ghost');
    await failLogins(registered.email, 10);
    await failLogins(unregistered, 10);

    const forRegistered = await login(registered.email, WRONG_PASSWORD);
    const forUnregistered = await login(unregistered, WRONG_PASSWORD);
    expect(forUnregistered.statusCode).toBe(429);
    expect(forUnregistered.json().error).toBe('too_many_attempts');
    expectRetryAfter(forUnregistered, 60);
    expect(forUnregistered.body).toBe(forRegistered.body);
  });

  it('after 100 failures within an hour answers 429 too_many_attempts until the hour passes', async () => {
    const account = await t.register();
    // Batches of 9 a minute apart stay under the per-minute limit (10) and the per-IP one (30).
    for (let done = 0; done < 99; done += 9) {
      await failLogins(account.email, 9, randomIp());
      t.clock.advance(61_000);
    }
    await failLogins(account.email, 1); // the 100th: still an ordinary 401

    t.clock.advance(61_000); // the minute window is empty again
    const locked = await login(account.email, account.password);
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error).toBe('too_many_attempts');
    const retryAfter = expectRetryAfter(locked, 3600);
    expect(retryAfter).toBeGreaterThan(60);

    t.clock.advance(retryAfter * 1000);
    const after = await login(account.email, account.password);
    expect(after.statusCode).toBe(200);
  });

  // The per-process store only (with Redis the counters live there, unbounded by this instance).
  it.runIf(backend.name === 'sqlite')(
    "keeps an account's failures counted while a flood of new addresses passes between guesses",
    async () => {
      const account = await t.register();
      const guesser = randomIp();
      await failLogins(uniqueEmail('decoy'), 10, guesser); // the guesser's own keys outweigh it
      await failLogins(account.email, 9, guesser);
      // Decoy addresses failing as often, each from an address of its own.
      for (let d = 0; d < 3; d++) await failLogins(uniqueEmail('decoy'), 9, randomIp());
      // More new addresses than the store keeps keys of a kind (10,000), a request each.
      for (let i = 0; i < 10_500; i++) {
        const ip = `10.${200 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
        expect((await t.call('GET', '/api/influencers', { ip })).statusCode).toBe(200);
      }
      await failLogins(account.email, 1); // the 10th
      const locked = await login(account.email, account.password);
      expect(locked.statusCode).toBe(429);
      expect(locked.json().error).toBe('too_many_attempts');
    },
    60_000,
  );

  it('lifts the lockout after a successful password reset', async () => {
    const account = await t.register();
    await t.smtp.waitFor(account.email, 1); // the confirmation e-mail
    await failLogins(account.email, 10);
    expect((await login(account.email, account.password)).statusCode).toBe(429);

    const forgot = await t.post(
      '/api/forgot-password',
      { email: account.email },
      { ip: randomIp() },
    );
    expect(forgot.statusCode).toBe(200);
    const code = await t.codeFor(account.email, 2);
    const newPassword = 'fresh-Meadow-lantern-82';
    const reset = await t.post(
      '/api/reset-password',
      { email: account.email, code, new_password: newPassword },
      { ip: randomIp() },
    );
    expect(reset.statusCode).toBe(200);

    const after = await login(account.email, newPassword);
    expect(after.statusCode).toBe(200);
  });

  it('after 30 failed logins in a minute from one IP answers 429 rate_limited from that IP, even for a correct login', async () => {
    const account = await t.register();
    const ip = randomIp();
    for (let i = 0; i < 30; i++) {
      const response = await login(uniqueEmail('spray'), WRONG_PASSWORD, ip);
      expect(response.statusCode, `failure #${i + 1}`).toBe(401);
    }
    const blocked = await login(account.email, account.password, ip);
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json().error).toBe('rate_limited');
    expectRetryAfter(blocked, 60);

    const elsewhere = await login(account.email, account.password, randomIp());
    expect(elsewhere.statusCode).toBe(200);
  });

  /** Today's parameters, as a PHC prefix (src/security/password-hashing.ts). */
  const TODAYS_HASH = /^\$argon2id\$v=19\$m=7168,t=9,p=1\$/;

  const storedHash = async (userId: string) =>
    (
      await t.db
        .selectFrom('users')
        .select('password_hash')
        .where('id', '=', userId)
        .executeTakeFirstOrThrow()
    ).password_hash;

  /**
   * A registered account whose stored hash was made with `memoryCost` KiB, `timeCost` passes and
   * `parallelism` lanes.
   */
  async function accountHashedWith(memoryCost: number, timeCost: number, parallelism = 1) {
    const account = await t.register();
    const old = await hash(account.password, {
      memoryCost,
      timeCost,
      parallelism,
      algorithm: 2,
    });
    await t.db
      .updateTable('users')
      .set({ password_hash: old })
      .where('id', '=', account.userId)
      .execute();
    return { account, old };
  }

  it("stores new passwords with today's parameters (argon2id, m=7 MiB, t=9, p=1)", async () => {
    const account = await t.register();
    expect(await storedHash(account.userId)).toMatch(TODAYS_HASH);
  });

  it.each([
    { name: 'weaker parameters (m=4 MiB, t=1)', memoryCost: 4096, timeCost: 1 },
    { name: 'the former parameters (m=19 MiB, t=2)', memoryCost: 19_456, timeCost: 2 },
    { name: 'the same memory and fewer passes (m=7 MiB, t=5)', memoryCost: 7168, timeCost: 5 },
    { name: 'more memory and passes (m=32 MiB, t=3)', memoryCost: 32_768, timeCost: 3 },
    // One parameter apart from today's, the others equal: each is compared.
    { name: 'less memory and the same passes (m=4 MiB, t=9)', memoryCost: 4096, timeCost: 9 },
    {
      name: "today's cost in two lanes (m=7 MiB, t=9, p=2)",
      memoryCost: 7168,
      timeCost: 9,
      parallelism: 2,
    },
  ])(
    "accepts a hash made with $name and rehashes it with today's on the next successful login",
    async ({ memoryCost, timeCost, parallelism = 1 }) => {
      const { account, old } = await accountHashedWith(memoryCost, timeCost, parallelism);
      expect(old).toContain(`m=${memoryCost},t=${timeCost},p=${parallelism}$`);

      const response = await login(account.email, account.password);
      expect(response.statusCode).toBe(200);
      const upgraded = await storedHash(account.userId);
      expect(upgraded).toMatch(TODAYS_HASH);
      // The upgraded hash still verifies the same password, and is kept from then on.
      expect((await login(account.email, account.password)).statusCode).toBe(200);
      expect(await storedHash(account.userId)).toBe(upgraded);
    },
  );

  it('signs in every concurrent login of the right password while one of them rehashes', async () => {
    // Each login rehashes; the one whose new hash lands second finds the stored hash changed. It
    // was changed by a login, not a password change: it signs in on that hash all the same.
    for (let round = 0; round < 4; round += 1) {
      const { account } = await accountHashedWith(19_456, 2);
      const answers = await Promise.all([
        login(account.email, account.password),
        login(account.email, account.password),
        login(account.email, account.password),
      ]);
      expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 200]);
      expect(await storedHash(account.userId)).toMatch(TODAYS_HASH);
    }
  });

  it('a rehash is not a change of the account: updated_at stays, as the login answered it', async () => {
    const { account } = await accountHashedWith(19_456, 2);
    const before = (await t.call('GET', '/api/profile', { token: account.accessToken })).json()
      .user;
    t.clock.advance(5_000);
    const response = await login(account.email, account.password);
    expect(response.statusCode).toBe(200);
    expect(response.json().user.updated_at).toBe(before.updated_at);
    const after = (
      await t.call('GET', '/api/profile', { token: response.json().access_token })
    ).json();
    expect(after.user.updated_at).toBe(before.updated_at);
  });

  it('leaves a hash with the former parameters as it is after a wrong password', async () => {
    const { account, old } = await accountHashedWith(19_456, 2);
    expect((await login(account.email, WRONG_PASSWORD)).statusCode).toBe(401);
    expect(await storedHash(account.userId)).toBe(old);
  });
});
