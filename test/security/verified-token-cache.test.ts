import { describe, expect, it } from 'vitest';
import { VerifiedTokenCache, type VerifiedToken } from '../../src/security/verified-token-cache.js';

const NOW = 1_000_000;

function entry(n: number, expiresAt = NOW + 900_000): VerifiedToken {
  return { claims: { userId: `u${n}`, sessionId: `s${n}`, expiresAt }, kid: 'k1', expiresAt };
}

describe('verified token cache', () => {
  it('keeps a token for each of 10,000 sockets (every one reconnecting after a drop)', () => {
    const cache = new VerifiedTokenCache();
    for (let n = 0; n < 10_000; n++) cache.set(`t${n}`, entry(n));
    for (let n = 0; n < 10_000; n++) expect(cache.get(`t${n}`, NOW)?.claims.userId).toBe(`u${n}`);
  });

  it('drops the least recently used token when full, not the oldest inserted', () => {
    const cache = new VerifiedTokenCache(3);
    cache.set('a', entry(1));
    cache.set('b', entry(2));
    cache.set('c', entry(3));
    expect(cache.get('a', NOW)).toBeDefined(); // now b is the least recently used
    cache.set('d', entry(4));
    expect(cache.get('b', NOW)).toBeUndefined();
    expect(cache.get('a', NOW)).toBeDefined();
    expect(cache.get('c', NOW)).toBeDefined();
    expect(cache.get('d', NOW)).toBeDefined();
    expect(cache.size).toBe(3);
  });

  it('forgets a token once it has expired', () => {
    const cache = new VerifiedTokenCache(3);
    cache.set('a', entry(1, NOW + 10));
    expect(cache.get('a', NOW + 10)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('holds a token once when it is set again', () => {
    const cache = new VerifiedTokenCache(2);
    cache.set('a', entry(1));
    cache.set('a', entry(1));
    cache.set('b', entry(2));
    expect(cache.get('a', NOW)).toBeDefined();
    expect(cache.size).toBe(2);
  });
});
