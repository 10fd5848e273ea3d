import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RedisWindowStore } from '../../src/limits/redis-store.js';

const redisUrl = process.env.TEST_REDIS_URL;
const ONE_A_MINUTE = [{ limit: 1, windowMs: 60_000 }];

describe.skipIf(!redisUrl)('rate limits in Redis: REDIS_PREFIX', () => {
  it("keeps deployments on one Redis apart: one's counters are not another's", async () => {
    const connect = (prefix: string) =>
      RedisWindowStore.connect(redisUrl as string, pino({ level: 'silent' }), { prefix });
    const [staging, production] = [`${randomUUID()}:`, `${randomUUID()}:`];
    const stores = await Promise.all([connect(staging), connect(staging), connect(production)]);
    const [first, sameDeployment, otherDeployment] = stores;
    try {
      const now = Date.now();
      expect((await first!.consume('login-failures:ada', ONE_A_MINUTE, now)).allowed).toBe(true);
      expect((await sameDeployment!.consume('login-failures:ada', ONE_A_MINUTE, now)).allowed).toBe(
        false,
      );
      expect(
        (await otherDeployment!.consume('login-failures:ada', ONE_A_MINUTE, now)).allowed,
      ).toBe(true);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });
});
