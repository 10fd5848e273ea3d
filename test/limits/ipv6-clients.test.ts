import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

const WRONG_PASSWORD = 'not-the-Right-one-55';
const hex = () => randomInt(1, 0xffff).toString(16);

/** A random /64 in the documentation range, as its first four groups (`2001:db8:x:y`). */
function randomPrefix(): string {
  return `2001:db8:${hex()}:${hex()}`;
}

/** The /64 right next to `prefix` (the 64th bit flipped): a different home line. */
function neighbourOf(prefix: string): string {
  const groups = prefix.split(':');
  const last = Number.parseInt(groups[3] as string, 16);
  return [...groups.slice(0, 3), (last ^ 1).toString(16)].join(':');
}

describe.each(backends)('per-IP limits count an IPv6 client by its /64 ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  // Refused by validation, but counted against the unauthenticated budget (300 a minute).
  const cheap = (ip: string) => t.post('/api/forgot-password', {}, { ip });
  async function spend(addresses: readonly string[], count: number) {
    for (let i = 0; i < count; i++) {
      const response = await cheap(addresses[i % addresses.length] as string);
      expect(response.statusCode, `request ${i + 1} of ${count}`).toBe(400);
    }
  }

  it('two addresses of one /64 share the unauthenticated budget; the next /64 has its own', async () => {
    const prefix = randomPrefix();
    await spend([`${prefix}::1`, `${prefix}:a:b:c:d`], 300);

    const refused = await cheap(`${prefix}:ffff:ffff:ffff:fffe`);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toBe('rate_limited');
    expect((await cheap(`${neighbourOf(prefix)}::1`)).statusCode).toBe(400);
  });

  it('an IPv4-mapped IPv6 address is its IPv4 address', async () => {
    const ipv4 = `198.51.100.${randomInt(1, 255)}`;
    await spend([`::ffff:${ipv4}`, ipv4], 300);

    expect((await cheap(ipv4)).statusCode).toBe(429);
    expect((await cheap(`::ffff:${ipv4}`)).statusCode).toBe(429);
    expect((await cheap(`203.0.113.${randomInt(1, 255)}`)).statusCode).toBe(400);
  });

  it('failed logins from one /64 add up; sessions and logs keep the full address', async () => {
    const account = await t.register();
    const prefix = randomPrefix();
    const login = (email: string, password: string, ip: string) =>
      t.post('/api/login', { email, password }, { ip });
    for (let i = 0; i < 30; i++) {
      const ip = i % 2 === 0 ? `${prefix}::${hex()}` : `${prefix}:1:2:3:${hex()}`;
      expect((await login(uniqueEmail('spray'), WRONG_PASSWORD, ip)).statusCode).toBe(401);
    }

    const blocked = await login(account.email, STRONG_PASSWORD, `${prefix}:9:9:9:9`);
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json().error).toBe('rate_limited');

    const neighbour = `${neighbourOf(prefix)}:5:6:7:8`;
    const allowed = await login(account.email, STRONG_PASSWORD, neighbour);
    expect(allowed.statusCode).toBe(200);
    const { sessions } = (
      await t.call('GET', '/api/sessions', { token: allowed.json().access_token, ip: neighbour })
    ).json();
    const current = sessions.find((s: { current: boolean }) => s.current);
    expect(current.ip).toBe(neighbour);
    expect(t.logs.some((line) => line.includes(`"ip":"${neighbour}"`))).toBe(true);
    expect(t.logs.some((line) => line.includes('/64'))).toBe(false);
  });
});
