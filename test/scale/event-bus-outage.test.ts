import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/events/bus.js';
import { RedisEventBus } from '../../src/events/redis-bus.js';
import { canRunPrivateRedis, PrivateRedis } from './private-servers.js';
import { waitUntil } from './service-process.js';

const enabled = Boolean(process.env.TEST_REDIS_URL) && canRunPrivateRedis;
if (!enabled) {
  console.warn('TEST_REDIS_URL not set or no redis-server: skipping test/scale/event-bus-outage.');
}

describe.skipIf(!enabled)('the Redis event bus while Redis goes away and comes back', () => {
  let redis: PrivateRedis;
  let a: RedisEventBus;
  let b: RedisEventBus;
  const log = pino({ level: 'silent' });

  beforeAll(async () => {
    redis = await PrivateRedis.create();
    [a, b] = await Promise.all([
      RedisEventBus.connect(redis.url, log),
      RedisEventBus.connect(redis.url, log),
    ]);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis?.kill();
  });

  it("delivers locally while Redis is down, then asks B's clients to resync", async () => {
    const onA: Delivery[] = [];
    const onB: Delivery[] = [];
    let resyncs = 0;
    b.onResync(() => (resyncs += 1));
    await a.subscribe('alice', (d) => onA.push(d));
    await b.subscribe('alice', (d) => onB.push(d));
    a.publish(['alice'], { type: 't', n: 1 });
    await waitUntil('delivery on both instances', async () => onA.length + onB.length === 2, 5_000);

    await redis.kill();
    a.publish(['alice'], { type: 't', n: 2 });
    await waitUntil('local delivery on A', async () => onA.length === 2, 5_000);
    expect(onB).toHaveLength(1); // lost for B: it will be told to resync

    await redis.start();
    await waitUntil('B to resync', async () => resyncs === 1, 15_000);
    await waitUntil('A to publish through Redis again', async () => {
      a.publish(['alice'], { type: 't', n: 3 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      return onB.some((d) => d.event.n === 3);
    });
    expect(onB.map((d) => d.event.n)).not.toContain(2);
  });
});
