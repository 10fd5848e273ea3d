import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RedisWindowStore } from '../../src/limits/redis-store.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { canRunPrivateRedis, PrivateRedis } from '../scale/private-servers.js';
import { waitUntil } from '../scale/service-process.js';

if (!canRunPrivateRedis) console.warn('no redis-server: skipping test/limits/redis-silent.');

const RULES = [{ limit: 1_000, windowMs: 60_000 }];

/** A connection cut without a FIN or RST looks open for hours unless something asks it. */
describe.skipIf(!canRunPrivateRedis)('a Redis connection cut without a word', () => {
  it('is replaced, and the limits are counted in Redis again', async () => {
    const redis = await PrivateRedis.create();
    const proxy = await TcpProxy.start(redis.port);
    const store = await RedisWindowStore.connect(
      `redis://127.0.0.1:${proxy.port}`,
      pino({ level: 'silent' }),
      { silenceCheck: { everyMs: 100, withinMs: 300 } },
    );
    try {
      expect((await store.consume('k', RULES, Date.now())).allowed).toBe(true);
      proxy.silenceOpenFlows();
      await expect(store.consume('k', RULES, Date.now())).rejects.toThrow(/timed out/);
      await waitUntil(
        'a command answered again',
        () =>
          store.consume('k', RULES, Date.now()).then(
            () => true,
            () => false,
          ),
        5_000,
      );
      // Counted in Redis itself, through the new connection.
      expect(Number(redis.cli('ZCARD', 'limits:k'))).toBeGreaterThanOrEqual(2);
    } finally {
      await store.close();
      await proxy.close();
      await redis.kill();
    }
  });
});
