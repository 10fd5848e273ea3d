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
