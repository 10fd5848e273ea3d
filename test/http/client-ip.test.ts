import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

/**
 * TRUST_PROXY=true: the client's address is the left-most X-Forwarded-For entry. An IPv6 zone
 * (`%eth0`) names an interface of whoever saw the client, and may be long: it is dropped, so the
 * limits can parse the address and sessions can store it (at most 45 characters).
 */
describe.each(backends)('client addresses with an IPv6 zone ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { TRUST_PROXY: 'true' } });
  });
  afterAll(() => t.close());

  it.each(['fe80::1%eth0.5', 'fe80::1%br-0a1b', '::1%-'])(
    'X-Forwarded-For: %s is an address like any other (400 for a bad body, not 500)',
    async (forwarded) => {
      const response = await t.post(
        '/api/forgot-password',
        {},
        { ip: randomIp(), headers: { 'x-forwarded-for': forwarded } },
      );
      expect([response.statusCode, response.json().error]).toEqual([400, 'validation_failed']);
    },
  );

  it('a zone of 100 characters: the account and its session are created, with the address alone', async () => {
    const email = uniqueEmail();
    const registered = await t.post(
      '/api/register',
      { email, password: STRONG_PASSWORD },
      { ip: randomIp(), headers: { 'x-forwarded-for': `fe80::1%${'a'.repeat(100)}` } },
    );
    expect(registered.statusCode, registered.body).toBe(201);
    const sessions = await t.call('GET', '/api/sessions', {
      token: registered.json().access_token,
    });
    expect(sessions.json().sessions.map((s: { ip: string }) => s.ip)).toEqual(['fe80::1']);
  });
});
