import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FallbackWindowStore } from '../../src/limits/fallback-store.js';
import { MemoryWindowStore } from '../../src/limits/memory-store.js';
import { LIMITS } from '../../src/limits/policies.js';
import { RedisWindowStore } from '../../src/limits/redis-store.js';
import { canRunPrivateRedis, PrivateRedis } from '../scale/private-servers.js';
import { waitUntil } from '../scale/service-process.js';

if (!canRunPrivateRedis) console.warn('no redis-server: skipping test/limits/fallback-hung-redis.');

const RULE = { limit: 10, windowMs: 60_000 };
const silent = pino({ level: 'silent' });

/**
 * A Redis that hangs (SIGSTOP) runs, once it runs again, the commands sent to it meanwhile; memory
 * counted the same calls meanwhile and writes them to Redis once it answers. Each attempt must
 * count once there (API.md: 10 failed logins a minute, 100 an hour), one taken back (a right
 * password) not at all, and a wait answered meanwhile stay within its window.
 */
describe.skipIf(!canRunPrivateRedis)('the fallback store while Redis hangs', () => {
  let redis: PrivateRedis;
  let store: FallbackWindowStore;
  let now = Date.now();
  beforeAll(async () => {
    redis = await PrivateRedis.create();
    const primary = await RedisWindowStore.connect(redis.url, silent);
    store = new FallbackWindowStore(primary, new MemoryWindowStore(() => now), {
      log: silent,
      clock: () => now,
      probe: () => primary.takesWrites(),
      probeTiming: { firstMs: 50, maxMs: 200 },
    });
  });
  afterEach(() => redis.thaw());
  afterAll(async () => {
    await store?.close();
    await redis?.kill();
  });

  const heldInRedis = (key: string) => redis.cli('ZCARD', `limits:${key}`);
  async function thawAndCatchUp() {
    redis.thaw();
    await waitUntil('Redis to answer again', async () => redis.cli('PING') === 'PONG', 5_000);
    await sleep(1_500); // the breaker's probe finds Redis back (50-200 ms) and catches it up
  }

  it('an attempt whose command timed out counts once in Redis, not twice', async () => {
    const key = 'login-failures:timed-out';
    expect((await store.consume(key, [RULE], (now += 10))).allowed).toBe(true); // in Redis
    redis.freeze();
    // Times out; memory counts it; the frozen Redis runs it when it wakes up.
    expect((await store.consume(key, [RULE], (now += 10))).allowed).toBe(true);
    await thawAndCatchUp();
    expect(heldInRedis(key)).toBe('2');
  });

  it('an attempt whose command timed out, taken back, is not left counted in Redis', async () => {
    const key = 'login-failures:timed-out-released';
    expect((await store.consume(key, [RULE], (now += 10))).allowed).toBe(true);
    redis.freeze();
    const right = await store.consume(key, [RULE], (now += 10));
    expect(right.allowed).toBe(true);
    await store.release(key, right.event as string);
    await thawAndCatchUp();
    expect(heldInRedis(key)).toBe('1');
  });

  it('attempts memory counted in one millisecond reach Redis as as many events', async () => {
    redis.freeze();
    await store.consume('login-failures:opener', [RULE], now); // opens the breaker
    const key = 'login-failures:same-millisecond';
    const attempts = await Promise.all([1, 2, 3, 4].map(() => store.consume(key, [RULE], now)));
    expect(attempts.every((a) => a.allowed)).toBe(true);
    await store.release(key, attempts[0]?.event as string); // one was right
    await thawAndCatchUp();
    expect(heldInRedis(key)).toBe('3');
  });
});

// A call that waited for a hung Redis (up to the 500 ms command timeout) comes after calls made
// meanwhile: counted at its own older time, memory's wait exceeded the window (Retry-After 61).
describe.skipIf(!canRunPrivateRedis)('a call that waited for a hung Redis', () => {
  let redis: PrivateRedis;
  let store: FallbackWindowStore;
  beforeAll(async () => {
    redis = await PrivateRedis.create();
    const primary = await RedisWindowStore.connect(redis.url, silent);
    store = new FallbackWindowStore(primary, new MemoryWindowStore(Date.now), {
      log: silent,
      clock: Date.now,
      probe: () => primary.takesWrites(),
    });
  });
  afterAll(async () => {
    redis?.thaw();
    await store?.close();
    await redis?.kill();
  });

  it('answers a code request inside the window with Retry-After ≤ 60 (API.md, Values)', async () => {
    const rules = [LIMITS.codeSendsPerAddress];
    const key = 'code-sends:reset_password:someone';
    redis.freeze();
    const opener = store.consume('auth-requests:192.0.2.1', [LIMITS.authRequestsPerIp], Date.now());
    await sleep(400);
    const waiting = store.consume(key, rules, Date.now()); // waits for Redis too
    await opener; // the breaker is open: the next call is counted in memory at once
    await sleep(50);
    expect((await store.consume(key, rules, Date.now())).allowed).toBe(true);
    const refused = await waiting;
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
  });
});
