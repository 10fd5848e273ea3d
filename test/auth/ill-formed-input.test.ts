import { hash } from '@node-rs/argon2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARGON2_PARAMETERS } from '../../src/security/password-hashing.js';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

/** JSON can carry an unpaired surrogate (`\ud800`); UTF-8 cannot, and encoders write U+FFFD. */
const ILL_FORMED = 'pass\ud800word-long-enough';
const AS_ENCODED = 'pass\ufffdword-long-enough';

describe.each(backends)('ill-formed text and odd ids in the Auth group ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('a password with an unpaired surrogate is refused (400 weak_password), at register and change', async () => {
    const registered = await t.post(
      '/api/register',
      { email: uniqueEmail(), password: ILL_FORMED },
      { ip: randomIp() },
    );
    expect([registered.statusCode, registered.json().error]).toEqual([400, 'weak_password']);
    const account = await t.register();
    const changed = await t.post(
      '/api/change-password',
      { password: STRONG_PASSWORD, new_password: ILL_FORMED },
      { token: account.accessToken },
    );
    expect([changed.statusCode, changed.json().error]).toEqual([400, 'weak_password']);
  });

  it('logging in with one never matches a hash of what it would encode to', async () => {
    const account = await t.register();
    const stored = await hash(AS_ENCODED, ARGON2_PARAMETERS);
    await t.db
      .updateTable('users')
      .set({ password_hash: stored })
      .where('id', '=', account.userId)
      .execute();
    const wrong = await t.post(
      '/api/login',
      { email: account.email, password: ILL_FORMED },
      { ip: randomIp() },
    );
    expect([wrong.statusCode, wrong.json().error]).toEqual([401, 'invalid_credentials']);
    const right = await t.post(
      '/api/login',
      { email: account.email, password: AS_ENCODED },
      { ip: randomIp() },
    );
    expect(right.statusCode).toBe(200);
  });

  it('an address with one is refused at registration, and names no account at login', async () => {
    const email = `lone\ud800${uniqueEmail()}`;
    const registered = await t.post('/api/register', { email, password: STRONG_PASSWORD });
    expect([registered.statusCode, registered.json().error]).toEqual([400, 'validation_failed']);
    expect(registered.json().details).toEqual([
      { field: 'email', message: 'must be valid Unicode text' },
    ]);
    // An account whose address is what the ill-formed one would be stored as.
    const encoded = email.replace('\ud800', '\ufffd');
    await t.register(encoded);
    const login = await t.post(
      '/api/login',
      { email, password: STRONG_PASSWORD },
      { ip: randomIp() },
    );
    expect([login.statusCode, login.json().error]).toEqual([401, 'invalid_credentials']);
  });

  it('a name or bio with one is refused (400 validation_failed), and nothing changes', async () => {
    const registered = await t.post('/api/register', {
      email: uniqueEmail(),
      password: STRONG_PASSWORD,
      name: 'n\ud800',
    });
    expect([registered.statusCode, registered.json().error]).toEqual([400, 'validation_failed']);
    const account = await t.register();
    for (const [field, value] of [
      ['name', 'n\udc00'],
      ['bio', 'b\ud800'],
    ] as const) {
      const changed = await t.call('PATCH', '/api/profile', {
        token: account.accessToken,
        body: { bio: 'kept?', [field]: value },
      });
      expect([changed.statusCode, changed.json().details]).toEqual([
        400,
        [{ field, message: 'must be valid Unicode text' }],
      ]);
    }
    const profile = await t.call('GET', '/api/profile', { token: account.accessToken });
    expect(profile.json().user).toMatchObject({ name: null, bio: null });
  });

  it.each([36, 64, 65, 100, 101])(
    'DELETE /api/sessions/{id} with an unknown id of %i characters answers 404 not_found',
    async (length) => {
      const account = await t.register();
      const response = await t.call('DELETE', `/api/sessions/${'a'.repeat(length)}`, {
        token: account.accessToken,
      });
      expect([response.statusCode, response.json().error]).toEqual([404, 'not_found']);
    },
  );
});
