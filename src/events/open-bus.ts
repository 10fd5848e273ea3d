import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { EventBus } from './bus.js';
import { MemoryEventBus } from './memory-bus.js';

/** One process by default; with REDIS_URL, Redis pub/sub reaching every instance. */
export async function openEventBus(
  config: Config,
  clock: () => number,
  log: FastifyBaseLogger,
): Promise<EventBus> {
  if (config.redisUrl === undefined) return new MemoryEventBus(log, clock);
  const { RedisEventBus } = await import('./redis-bus.js');
  return RedisEventBus.connect(config.redisUrl, log, clock, { prefix: config.redisPrefix });
}
