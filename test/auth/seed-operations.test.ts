import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';

describe.each(backends)('seed operations, byte-exact ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('POST /api/confirm-email answers 200 {"message":"Email confirmed"} and nothing else', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    const response = await t.post(
      '/api/confirm-email',
      { email: account.email, code },
      { token: account.accessToken },
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body).toBe('{"message":"Email confirmed"}');
  });

  it('POST /api/change-password answers 200 {"message":"User changed password successful"} and nothing else', async () => {
    const account = await t.register();
    const response = await t.post(
      '/api/change-password',
      { password: STRONG_PASSWORD, new_password: 'another-Quiet-harbour-93' },
      { token: account.accessToken },
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body).toBe('{"message":"User changed password successful"}');
  });
});
