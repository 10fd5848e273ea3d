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

  it('the longest address in text (45 characters: IPv6 with an IPv4 tail) is an address, kept whole', async () => {
    const longest = '0000:0000:0000:0000:0000:ffff:192.168.100.200';
    expect(longest).toHaveLength(45);
    const registered = await t.post(
      '/api/register',
      { email: uniqueEmail(), password: STRONG_PASSWORD },
      { ip: randomIp(), headers: { 'x-forwarded-for': longest } },
    );
    expect(registered.statusCode, registered.body).toBe(201);
    const sessions = await t.call('GET', '/api/sessions', {
      token: registered.json().access_token,
    });
    expect(sessions.json().sessions.map((s: { ip: string }) => s.ip)).toEqual([longest]);
  });
});

/**
 * Some proxies (Azure's among them) forward the client's address with its port. Taken as no
 * address, it fell back to the socket's, the proxy's: every client behind it shared one per-IP
 * budget.
 */
describe.each(backends)('client addresses with a port ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { TRUST_PROXY: '127.0.0.1,::1' } });
  });
  afterAll(() => t.close());

  it.each([
    ['203.0.113.7:51234', '203.0.113.7'],
    ['[2001:db8::7]:443', '2001:db8::7'],
    ['[2001:db8::8]', '2001:db8::8'],
    ['198.51.100.9, 203.0.113.8:80', '203.0.113.8'],
  ])('X-Forwarded-For: %s is the client %s', async (forwarded, address) => {
    const registered = await t.post(
      '/api/register',
      { email: uniqueEmail(), password: STRONG_PASSWORD },
      { ip: '127.0.0.1', headers: { 'x-forwarded-for': forwarded } },
    );
    expect(registered.statusCode, registered.body).toBe(201);
    const sessions = await t.call('GET', '/api/sessions', {
      token: registered.json().access_token,
    });
    expect(sessions.json().sessions.map((s: { ip: string }) => s.ip)).toEqual([address]);
    const logged = t.logs
      .map((line) => JSON.parse(line))
      .filter((line) => line.msg === 'request completed' && line.url === '/api/register');
    expect(logged.map((line) => line.ip)).toContain(address);
  });

  it('a port alone, or a port past 5 digits, is no address: the socket is the client', async () => {
    for (const forwarded of [':8080', '203.0.113.7:123456', '[2001:db8::7]:123456', '[]:80']) {
      const registered = await t.post(
        '/api/register',
        { email: uniqueEmail(), password: STRONG_PASSWORD },
        { ip: '127.0.0.1', headers: { 'x-forwarded-for': forwarded } },
      );
      const sessions = await t.call('GET', '/api/sessions', {
        token: registered.json().access_token,
      });
      expect(sessions.json().sessions.map((s: { ip: string }) => s.ip)).toEqual(['127.0.0.1']);
    }
  });
});
