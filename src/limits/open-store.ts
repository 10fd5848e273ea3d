import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { DependencyCheck } from '../operations/health.js';
import { FallbackWindowStore } from './fallback-store.js';
import { MemoryWindowStore } from './memory-store.js';
import type { SlidingWindowStore } from './sliding-window.js';

/** Memory by default; with REDIS_URL, Redis shared by every instance, memory while it is away. */
export async function openLimitStore(
  config: Config,
  clock: () => number,
  log: FastifyBaseLogger,
): Promise<{ store: SlidingWindowStore; check?: DependencyCheck }> {
  const memory = new MemoryWindowStore(clock);
  if (config.redisUrl === undefined) return { store: memory };
  const { RedisWindowStore } = await import('./redis-store.js');
  const redis = await RedisWindowStore.connect(config.redisUrl, log, {
    prefix: config.redisPrefix,
  });
  return {
    store: new FallbackWindowStore(redis, memory, {
      log,
      clock,
      probe: () => redis.takesWrites(),
    }),
    check: () => redis.takesWrites(),
  };
}
