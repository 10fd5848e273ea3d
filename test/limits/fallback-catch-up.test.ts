import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FallbackWindowStore } from '../../src/limits/fallback-store.js';
import { MemoryWindowStore } from '../../src/limits/memory-store.js';
import { RedisWindowStore } from '../../src/limits/redis-store.js';
import { canRunPrivateRedis, PrivateRedis } from '../scale/private-servers.js';
import { waitUntil } from '../scale/service-process.js';

if (!canRunPrivateRedis) console.warn('no redis-server: skipping test/limits/fallback-catch-up.');

const RULE = { limit: 3, windowMs: 60_000 };

/**
 * A clear (a lifted lockout) or a release (an attempt taken back) that Redis did not take reaches
 * Redis once it answers: here it is the call that finds Redis away, so the breaker was still
 * closed when it began.
 */
describe.skipIf(!canRunPrivateRedis)('the fallback store: what Redis did not take', () => {
  let redis: PrivateRedis;
  let primary: RedisWindowStore;
  let store: FallbackWindowStore;
  const now = Date.now();
  beforeAll(async () => {
    redis = await PrivateRedis.create();
    primary = await RedisWindowStore.connect(redis.url, pino({ level: 'silent' }));
    store = new FallbackWindowStore(primary, new MemoryWindowStore(() => now), {
      log: pino({ level: 'silent' }),
      clock: () => now,
      probe: () => primary.takesWrites(),
      probeTiming: { firstMs: 50, maxMs: 200 },
    });
  });
  afterAll(async () => {
    await store?.close();
    await redis?.kill();
  });

  it('is cleared in Redis when Redis answers again', async () => {
    const key = 'login-failures:someone';
    for (let i = 0; i < RULE.limit; i++)
      expect((await store.consume(key, [RULE], now)).allowed).toBe(true);
    expect((await store.consume(key, [RULE], now)).allowed).toBe(false); // locked, in Redis

    // The clear finds the connection gone (a blip on this side: Redis keeps its data), so it never
    // reaches Redis; ioredis reconnects by itself.
    const connection = (primary as unknown as { redis: Redis }).redis; // the only way to name it
    const closed = once(connection, 'close');
    redis.cli('CLIENT', 'KILL', 'ID', String(await connection.client('ID')));
    await closed;
    await store.clear(key);
    // Refused while Redis still holds the three failures (a refused call counts nothing).
    await waitUntil(
      'the clear to reach Redis',
      async () => (await primary.consume(key, [RULE], now)).allowed,
      5_000,
    );
  });

  it('takes a release back in Redis when Redis answers again', async () => {
    const key = 'login-failures:someone-else';
    const decisions = [];
    for (let i = 0; i < RULE.limit; i++) decisions.push(await store.consume(key, [RULE], now));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect((await store.consume(key, [RULE], now)).allowed).toBe(false); // at the limit, in Redis

    // The right password takes its attempt back, but the connection is gone: Redis keeps it.
    const connection = (primary as unknown as { redis: Redis }).redis;
    const closed = once(connection, 'close');
    redis.cli('CLIENT', 'KILL', 'ID', String(await connection.client('ID')));
    await closed;
    await store.release(key, decisions[0]?.event as string);
    await waitUntil(
      'the release to reach Redis',
      async () => (await primary.consume(key, [RULE], now)).allowed,
      5_000,
    );
  });

  it('counts in Redis, when Redis answers again, what memory counted meanwhile', async () => {
    const key = 'login-failures:counted-meanwhile';
    for (let i = 0; i < RULE.limit - 1; i++)
      expect((await store.consume(key, [RULE], now)).allowed).toBe(true); // in Redis

    // The connection is gone: the next attempt is counted in memory, where it is the first.
    const connection = (primary as unknown as { redis: Redis }).redis;
    const closed = once(connection, 'close');
    redis.cli('CLIENT', 'KILL', 'ID', String(await connection.client('ID')));
    await closed;
    expect((await store.consume(key, [RULE], now)).allowed).toBe(true);
    // Once Redis answers, it holds all three: the budget spent meanwhile stays spent. (Read with
    // ZCARD: a consume would count one more itself.)
    await waitUntil(
      'the count made meanwhile to reach Redis',
      async () => redis.cli('ZCARD', `limits:${key}`) === '3',
      5_000,
    );
    expect((await primary.consume(key, [RULE], now)).allowed).toBe(false);
  });
});
