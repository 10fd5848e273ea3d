import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp, type Account, USER_FIELDS } from '../helpers/test-app.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe.each(backends)('profile ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const getProfile = (account: Account) =>
    t.call('GET', '/api/profile', { token: account.accessToken });
  const patch = (account: Account, body: unknown) =>
    t.call('PATCH', '/api/profile', { token: account.accessToken, body });

  function expectValidationFailed(
    response: Awaited<ReturnType<typeof patch>>,
    field: string,
  ): void {
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expect(body.error).toBe('validation_failed');
    expect(body.details.map((d: { field: string }) => d.field)).toContain(field);
  }

  describe('GET /api/profile', () => {
    it('answers 200 {user} with exactly the user fields, never a hash', async () => {
      const account = await t.register();
      const response = await getProfile(account);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      const body = response.json();
      expect(Object.keys(body)).toEqual(['user']);
      expect(Object.keys(body.user).sort()).toEqual(USER_FIELDS);
      expect(body.user).toMatchObject({
        id: account.userId,
        email: account.email,
        email_confirmed: false,
        name: null,
        bio: null,
        avatar_url: null,
      });
      expect(response.body).not.toMatch(/argon2|password/i);
    });

    it('gives times as ISO 8601 UTC strings', async () => {
      const account = await t.register();
      const { user } = (await getProfile(account)).json();
      expect(user.created_at).toMatch(ISO_UTC);
      expect(user.updated_at).toMatch(ISO_UTC);
      expect(Math.abs(Date.parse(user.created_at) - t.clock.now())).toBeLessThan(60_000);
    });
  });

  describe('PATCH /api/profile', () => {
    it('sets name, bio and avatar_url and answers {message:"Profile updated", user}', async () => {
      const account = await t.register();
      const response = await patch(account, {
        name: 'Ada Lovelace',
        bio: 'Analyst.\nLikes engines.',
        avatar_url: 'https://cdn.example.test/ada.png',
      });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.message).toBe('Profile updated');
      expect(body.user).toMatchObject({
        id: account.userId,
        name: 'Ada Lovelace',
        bio: 'Analyst.\nLikes engines.',
        avatar_url: 'https://cdn.example.test/ada.png',
      });
      expect((await getProfile(account)).json().user.name).toBe('Ada Lovelace');
    });

    it('changes updated_at (and not created_at)', async () => {
      const account = await t.register();
      const before = (await getProfile(account)).json().user;
      t.clock.advance(5_000);
      const after = (await patch(account, { bio: 'new' })).json().user;
      expect(after.updated_at).toMatch(ISO_UTC);
      expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
      expect(after.created_at).toBe(before.created_at);
    });

    it('null clears a field; an absent field is left as it is', async () => {
      const account = await t.register();
      await patch(account, { name: 'Grace', bio: 'Admiral', avatar_url: 'https://x.test/g.png' });
      const response = await patch(account, { bio: null });
      expect(response.statusCode).toBe(200);
      expect(response.json().user).toMatchObject({
        name: 'Grace',
        bio: null,
        avatar_url: 'https://x.test/g.png',
      });
      const cleared = await patch(account, { name: null, avatar_url: null });
      expect(cleared.json().user).toMatchObject({ name: null, bio: null, avatar_url: null });
    });

    it('name: 1–100 characters', async () => {
      const account = await t.register();
      expect((await patch(account, { name: 'x'.repeat(100) })).statusCode).toBe(200);
      expect((await patch(account, { name: '🎸'.repeat(100) })).statusCode).toBe(200); // 200 UTF-16 units
      expectValidationFailed(await patch(account, { name: '🎸'.repeat(101) }), 'name');
      expect((await patch(account, { name: 'é'.repeat(100) })).statusCode).toBe(200);
      expectValidationFailed(await patch(account, { name: 'x'.repeat(101) }), 'name');
      expectValidationFailed(await patch(account, { name: '' }), 'name');
      expect((await getProfile(account)).json().user.name).toBe('é'.repeat(100));
    });

    it('name: trimmed and composed (NFC) before its 1–100 characters are counted', async () => {
      const account = await t.register();
      const decomposed = 'Zoe\u0301'; // é as e + combining acute
      const updated = await patch(account, { name: `  \t${decomposed} Saldana \n` });
      expect(updated.statusCode).toBe(200);
      expect(updated.json().user.name).toBe('Zo\u00e9 Saldana');
      expect((await patch(account, { name: ` ${'x'.repeat(100)}  ` })).json().user.name).toBe(
        'x'.repeat(100),
      );
      expect((await patch(account, { name: 'e\u0301'.repeat(100) })).statusCode).toBe(200);
      expectValidationFailed(await patch(account, { name: ' \t ' }), 'name');
      expect((await getProfile(account)).json().user.name).toBe('\u00e9'.repeat(100));
      const registered = await t.call('POST', '/api/register', {
        body: { email: 'trimmed-name@example.test', password: STRONG_PASSWORD, name: ' Ada ' },
      });
      expect(registered.json().user.name).toBe('Ada');
    });

    it('name: control characters are refused', async () => {
      const account = await t.register();
      for (const name of ['Bad\u0000Name', 'Bad\nName', 'Bad\u001bName', 'Bad\u007fName']) {
        expectValidationFailed(await patch(account, { name }), 'name');
      }
      expect((await getProfile(account)).json().user.name).toBeNull();
    });

    it('name: something visible, and no bidirectional overrides (a name reading as another)', async () => {
      const account = await t.register();
      for (const name of [
        '\u200b',
        '\u200b\u2060',
        ' ',
        '\u3164', // Hangul filler: a letter that shows nothing
        '\u115f\u1160',
        '\uffa0',
        '\u200b\u3164',
        '\u2800', // Braille blank: a symbol that shows nothing
        'evil\u202egpj.exe',
        'a\u2066b\u2069',
      ]) {
        expectValidationFailed(await patch(account, { name }), 'name');
      }
      for (const name of ['👩‍💻', 'שלום\u200f Dana', 'می\u200cخواهم', 'Ada', '한국어', '⠓⠊']) {
        const updated = await patch(account, { name });
        expect(updated.statusCode, JSON.stringify(name)).toBe(200);
        expect(updated.json().user.name).toBe(name);
      }
    });

    it('bio: at most 500 characters', async () => {
      const account = await t.register();
      expect((await patch(account, { bio: 'b'.repeat(500) })).statusCode).toBe(200);
      expectValidationFailed(await patch(account, { bio: 'b'.repeat(501) }), 'bio');
      expect((await getProfile(account)).json().user.bio).toBe('b'.repeat(500));
    });

    it('bio: line breaks and tabs, no other control character (C0, DEL, C1)', async () => {
      const account = await t.register();
      for (const bio of ['a\u0000b', 'a\u001bb', 'a\u007fb', 'a\u0085b', 'a\u009bb'])
        expectValidationFailed(await patch(account, { bio }), 'bio');
      expect((await patch(account, { bio: 'a\tb\r\nc\u00a0d' })).statusCode).toBe(200);
    });

    it('avatar_url: an https URL only, as an influencer’s (http:, relative, credentials → validation_failed)', async () => {
      const account = await t.register();
      for (const avatar_url of [
        'https://ada:secret@example.test/a.png', // shown to every peer: no password in it
        'https://ada@example.test/a.png',
        'https://example.test/a b.png',
        'http://example.test/a.png',
        'javascript:alert(1)',
        '/images/a.png',
        'a.png',
        'ftp://example.test/a.png',
        'data:image/png;base64,AAAA',
        'https://',
        'https:example.test/a.png', // no "//": other parsers see no host
        'https:/example.test/a.png',
        'https:///example.test/a.png', // an empty host to other parsers
        'https://good.test\\@evil.test/a.png', // a backslash is a "/" to browsers only
        'https://example.test\\a.png',
      ]) {
        expectValidationFailed(await patch(account, { avatar_url }), 'avatar_url');
      }
      expect((await getProfile(account)).json().user.avatar_url).toBeNull();
      const ok = await patch(account, { avatar_url: 'https://example.test/a.png?size=64' });
      expect(ok.statusCode).toBe(200);
      expect(ok.json().user.avatar_url).toBe('https://example.test/a.png?size=64');
    });

    it('avatar_url: an https URL whatever the letter case of its scheme (as an influencer’s)', async () => {
      const account = await t.register();
      for (const avatar_url of ['HTTPS://example.test/a.png', 'Https://example.test/b.png']) {
        const response = await patch(account, { avatar_url });
        expect(response.statusCode, response.body).toBe(200);
        expect(response.json().user.avatar_url).toBe(avatar_url);
      }
      expectValidationFailed(
        await patch(account, { avatar_url: 'HTTP://example.test/a.png' }),
        'avatar_url',
      );
    });

    it('wrong types are validation_failed, with no coercion', async () => {
      const account = await t.register();
      expectValidationFailed(await patch(account, { name: 5 }), 'name');
      expectValidationFailed(await patch(account, { bio: true }), 'bio');
      expectValidationFailed(
        await patch(account, { avatar_url: ['https://a.test/x'] }),
        'avatar_url',
      );
      expectValidationFailed(await patch(account, { name: { first: 'Ada' } }), 'name');
      const { user } = (await getProfile(account)).json();
      expect(user).toMatchObject({ name: null, bio: null, avatar_url: null });
    });

    it('ignores unknown fields', async () => {
      const account = await t.register();
      const response = await patch(account, { name: 'Alan', role: 'admin', nickname: 'al' });
      expect(response.statusCode).toBe(200);
      const { user } = response.json();
      expect(user).toMatchObject({ id: account.userId, email: account.email, name: 'Alan' });
      expect(user).not.toHaveProperty('role');
      expect(user).not.toHaveProperty('nickname');
    });

    it('unknown fields named like account columns change nothing (no mass assignment)', async () => {
      const account = await t.register();
      const readRow = () =>
        t.db
          .selectFrom('users')
          .select(['email', 'email_normalized', 'email_confirmed_at', 'password_hash'])
          .where('id', '=', account.userId)
          .executeTakeFirst();
      const before = await readRow();
      const response = await patch(account, {
        bio: 'hello',
        email: 'hijack@example.test',
        email_normalized: 'hijack@example.test',
        email_confirmed_at: 1,
        password_hash: 'not-a-hash',
        created_at: 0,
      });
      expect(response.statusCode).toBe(200);
      expect(response.json().user).toMatchObject({
        email: account.email,
        email_confirmed: false,
        bio: 'hello',
      });
      expect(await readRow()).toEqual(before);
      await expect(t.login(account.email, account.password)).resolves.toBeDefined();
    });
  });

  describe('DELETE /api/profile', () => {
    it('a wrong password answers 400 incorrect_password and deletes nothing', async () => {
      const account = await t.register();
      const response = await t.call('DELETE', '/api/profile', {
        token: account.accessToken,
        body: { password: 'not-the-Password-123' },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toBe('incorrect_password');
      const user = await t.db
        .selectFrom('users')
        .select('id')
        .where('id', '=', account.userId)
        .executeTakeFirst();
      expect(user).toBeDefined();
      expect((await getProfile(account)).statusCode).toBe(200);
    });

    it('an overlong password is just a wrong one: 400 incorrect_password', async () => {
      const account = await t.register();
      const response = await t.call('DELETE', '/api/profile', {
        token: account.accessToken,
        body: { password: 'Zq7'.repeat(1500) },
      });
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json().error).toBe('incorrect_password');
      expect((await getProfile(account)).statusCode).toBe(200);
    });

    it('a missing password is validation_failed', async () => {
      const account = await t.register();
      const response = await t.call('DELETE', '/api/profile', {
        token: account.accessToken,
        body: {},
      });
      expectValidationFailed(response, 'password');
    });

    it('the right password: 200 {"message":"Account deleted"}; the account, its sessions and codes are gone; the token is refused; the address may register again', async () => {
      const account = await t.register();
      await t.codeFor(account.email); // the registration e-mail carries a confirmation code
      await t.login(account.email, account.password); // a second session
      const countRows = async (table: 'sessions' | 'one_time_codes') =>
        (
          await t.db
            .selectFrom(table)
            .select(t.db.fn.countAll<number>().as('n'))
            .where('user_id', '=', account.userId)
            .executeTakeFirstOrThrow()
        ).n;
      expect(Number(await countRows('sessions'))).toBe(2);
      expect(Number(await countRows('one_time_codes'))).toBe(1);

      const response = await t.call('DELETE', '/api/profile', {
        token: account.accessToken,
        body: { password: STRONG_PASSWORD },
      });
      expect(response.statusCode).toBe(200);
      expect(response.body).toBe('{"message":"Account deleted"}');

      const user = await t.db
        .selectFrom('users')
        .select('id')
        .where('id', '=', account.userId)
        .executeTakeFirst();
      expect(user).toBeUndefined();
      expect(Number(await countRows('sessions'))).toBe(0);
      expect(Number(await countRows('one_time_codes'))).toBe(0);

      const after = await getProfile(account);
      expect(after.statusCode).toBe(401);
      expect(after.json().error).toBe('unauthorized');

      const again = await t.register(account.email);
      expect(again.userId).not.toBe(account.userId);
    });
  });

  describe('every Profile endpoint requires a bearer token', () => {
    const calls = [
      ['GET', undefined],
      ['PATCH', { name: 'x' }],
      ['DELETE', { password: STRONG_PASSWORD }],
    ] as const;

    it.each(calls)(
      '%s /api/profile without a token: 401 + WWW-Authenticate: Bearer',
      async (method, body) => {
        const response = await t.call(method, '/api/profile', { body });
        expect(response.statusCode).toBe(401);
        expect(response.headers['www-authenticate']).toBe('Bearer');
        expect(response.json().error).toBe('unauthorized');
      },
    );

    it.each(calls)(
      '%s /api/profile with a malformed token: 401 + WWW-Authenticate: Bearer',
      async (method, body) => {
        const response = await t.call(method, '/api/profile', { body, token: 'not.a.jwt' });
        expect(response.statusCode).toBe(401);
        expect(response.headers['www-authenticate']).toBe('Bearer');
        expect(response.json().error).toBe('unauthorized');
      },
    );
  });
});
