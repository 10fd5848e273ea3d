import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { down, up } from '../../src/db/migrations/010_composed_emails.js';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';
import { seededAccountRow } from '../helpers/seeded-account.js';

/** One address in its two Unicode spellings: the accent composed (U+00E9) and decomposed. */
function spellings(prefix = 'jos') {
  const tag = randomBytes(4).toString('hex');
  return {
    composed: `${prefix}\u00e9.${tag}@example.test`,
    decomposed: `${prefix}e\u0301.${tag}@example.test`,
  };
}

describe.each(backends)('an address typed composed or decomposed ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const register = (email: string, password = STRONG_PASSWORD) =>
    t.post('/api/register', { email, password }, { ip: randomIp() });
  const login = (email: string, password = STRONG_PASSWORD) =>
    t.post('/api/login', { email, password }, { ip: randomIp() });

  it.each(['composed', 'decomposed'] as const)(
    'is one account, registered %s: the other spelling signs in to it and cannot register again',
    async (first) => {
      const pair = spellings();
      const registered = pair[first];
      const other = first === 'composed' ? pair.decomposed : pair.composed;
      const created = await register(registered);
      expect(created.statusCode, created.body).toBe(201);
      const signedIn = await login(other);
      expect(signedIn.statusCode, signedIn.body).toBe(200);
      expect(signedIn.json().user.id).toBe(created.json().user.id);
      // The address as the user typed it is what they see.
      expect(signedIn.json().user.email).toBe(registered);
      const again = await register(other);
      expect(again.statusCode).toBe(409);
      expect(again.json().error).toBe('email_taken');
    },
  );

  it('confirms with the code mailed to it, whichever spelling the confirmation names', async () => {
    const { composed, decomposed } = spellings();
    expect((await register(decomposed)).statusCode).toBe(201);
    const code = await t.codeFor(decomposed);
    const confirmed = await t.post('/api/confirm-email', { email: composed, code });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
  });

  it('counts failed logins of both spellings against the one account', async () => {
    const { composed, decomposed } = spellings();
    expect((await register(composed)).statusCode).toBe(201);
    for (let i = 0; i < 10; i += 1) {
      const failed = await login(i % 2 ? composed : decomposed, 'wrong password of the test');
      expect(failed.statusCode, `failure #${i + 1}`).toBe(401);
    }
    const blocked = await login(composed);
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json().error).toBe('too_many_attempts');
  });

  it('refuses an address with a character that composes into ASCII (U+1FEF becomes a backtick)', async () => {
    const tag = randomBytes(4).toString('hex');
    const owner = `a\`b.${tag}@example.test`;
    const squatted = await register(`a\u1fefb.${tag}@example.test`);
    expect(squatted.statusCode).toBe(400);
    expect(squatted.json().error).toBe('validation_failed');
    expect((await register(owner)).statusCode).toBe(201);
  });

  it('refuses a password that is the local part typed decomposed', async () => {
    const local = `rene\u0301e.${randomBytes(4).toString('hex')}`;
    const response = await register(`${local}@example.test`, local);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toBe('weak_password');
  });

  it('refuses an address that composing lengthens past what the index holds, with a 400', async () => {
    // U+FB2C is one UTF-16 unit and composes into three code points.
    const response = await register(`${'\ufb2c'.repeat(200)}@example.test`);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().error).toBe('validation_failed');
  });

  it('migration 010 gives decomposed keys their composed form, unless that one is taken, too long or a look-alike', async () => {
    const now = Date.now();
    const lone = spellings('lon');
    const twin = spellings('twi');
    const tag = randomBytes(4).toString('hex');
    const rows = [
      seededAccountRow(crypto.randomUUID(), lone.decomposed, 'x', now),
      seededAccountRow(crypto.randomUUID(), twin.composed, 'x', now),
      seededAccountRow(crypto.randomUUID(), twin.decomposed, 'x', now),
      // Registered under the former rule: composed, 600+ code points (the index holds 508) ...
      seededAccountRow(crypto.randomUUID(), `${'\ufb2c'.repeat(200)}${tag}@example.test`, 'x', now),
      // ... and U+1FEF, which composes into a backtick: the key of `a\`b@…`.
      seededAccountRow(crypto.randomUUID(), `a\u1fefb.${tag}@example.test`, 'x', now),
    ].map((row) => ({ ...row, email_normalized: row.email.toLowerCase() }));
    await t.db.insertInto('users').values(rows).execute();
    const keys = async () =>
      (
        await t.db
          .selectFrom('users')
          .select('email_normalized')
          .where(
            'id',
            'in',
            rows.map((row) => row.id),
          )
          .execute()
      )
        .map((row) => row.email_normalized)
        .sort();

    await up(t.db as Kysely<unknown>);
    expect(await keys()).toEqual(
      [lone.composed, twin.composed, twin.decomposed, rows[3]!.email, rows[4]!.email]
        .map((email) => email.toLowerCase())
        .sort(),
    );
    await down(t.db as Kysely<unknown>);
    expect(await keys()).toEqual(rows.map((row) => row.email_normalized).sort());
  });
});
