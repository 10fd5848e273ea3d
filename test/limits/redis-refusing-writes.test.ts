// A Redis that answers PING but refuses every write (a replica after a failover, READONLY, here;
// a failed save, MISCONF, does the same): limits stay in memory until it takes writes again,
// logged once, and readiness says it is down.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openLimitStore } from '../../src/limits/open-store.js';
import { capturedLog } from '../helpers/captured-log.js';
import { canRunPrivateRedis, PrivateRedis } from '../scale/private-servers.js';

if (!canRunPrivateRedis)
  console.warn('no redis-server: skipping test/limits/redis-refusing-writes.');

const RULES = [{ limit: 1_000, windowMs: 60_000 }];

describe.skipIf(!canRunPrivateRedis)('a Redis that answers PING but refuses writes', () => {
  let redis: PrivateRedis;
  let primary: PrivateRedis;
  beforeAll(async () => {
    [redis, primary] = await Promise.all([PrivateRedis.create(), PrivateRedis.create()]);
  });
  afterAll(async () => {
    await redis?.kill();
    await primary?.kill();
  });

  it('keeps the limits in memory without flapping back, and /readyz counts it down', async () => {
    const { log, lines } = capturedLog();
    const config = loadConfig({ REDIS_URL: redis.url });
    const { store, check } = await openLimitStore(config, Date.now, log);
    try {
      expect((await store.consume('refusing:a', RULES, Date.now())).allowed).toBe(true);
      await check?.();
      redis.cli('REPLICAOF', '127.0.0.1', String(primary.port)); // demoted by a failover
      await expect(check?.()).rejects.toThrow(/READONLY/);
      // Calls over 1.5 s: the breaker's probes (from 0.25 s on) must not find Redis back.
      for (let i = 0; i < 15; i++) {
        expect((await store.consume('refusing:a', RULES, Date.now())).allowed).toBe(true);
        await sleep(100);
      }
      expect(lines.filter((line) => /Redis is back/.test(line))).toEqual([]);
      expect(lines.filter((line) => /Redis is unavailable/.test(line))).toHaveLength(1);

      redis.cli('REPLICAOF', 'NO', 'ONE'); // promoted again: writes taken
      await check?.();
    } finally {
      await store.close();
    }
  });
});
