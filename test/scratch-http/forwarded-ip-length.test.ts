import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

/**
 * TRUST_PROXY=true: the client IP is the left-most X-Forwarded-For entry. clientIp() accepts any
 * string Node's isIP() accepts, including an IPv6 address with an arbitrarily long zone id, and
 * register/login store it in sessions.ip (varchar(64)). On PostgreSQL the insert fails (22001),
 * rendered 400 bad_request, after register has already created the account and queued its mail:
 * a state change on a 4xx, and the retry answers 409 email_taken.
 */
describe.each(backends)('TRUST_PROXY=true, over-long forwarded address ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { TRUST_PROXY: 'true' } });
  });
  afterAll(() => t.close());

  it('register with X-Forwarded-For fe80::1%<100 chars> succeeds (or fails without creating the account)', async () => {
    const forwarded = `fe80::1%${'a'.repeat(100)}`;
    const email = uniqueEmail();
    const first = await t.post(
      '/api/register',
      { email, password: STRONG_PASSWORD },
      { ip: randomIp(), headers: { 'x-forwarded-for': forwarded } },
    );
    const retry = await t.post('/api/register', { email, password: STRONG_PASSWORD }, { ip: randomIp() });
    expect([first.statusCode, first.json().error, retry.statusCode, retry.json().error]).toEqual([
      201,
      undefined,
      409,
      'email_taken',
    ]);
  });
});
