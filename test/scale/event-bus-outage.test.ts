import { Redis } from 'ioredis';
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
    // Until A's client has seen its connection go, a publish may be written to it and lost
    // (never delivered twice); from then on it is refused at once and delivered on A.
    await waitUntil('local delivery on A', async () => {
      a.publish(['alice'], { type: 't', n: 2 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      return onA.some((d) => d.event.n === 2);
    });
    expect(onA.filter((d) => d.event.n === 2)).toHaveLength(1);
    expect(onB).toHaveLength(1); // lost for B: it will be told to resync

    await redis.start();
    // At least once: B's subscription coming back and A's word that it lost publishes are
    // gathered into one resync when they come close together, not always.
    await waitUntil('B to resync', async () => resyncs >= 1, 15_000);
    await waitUntil('A to publish through Redis again', async () => {
      a.publish(['alice'], { type: 't', n: 3 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      return onB.some((d) => d.event.n === 3);
    });
    expect(onB.map((d) => d.event.n)).not.toContain(2);
  });
});

describe.skipIf(!enabled)('the Redis event bus while Redis is slower than a publish waits', () => {
  let redis: PrivateRedis;
  let bus: RedisEventBus;
  let admin: Redis;
  const log = pino({ level: 'silent' });

  beforeAll(async () => {
    redis = await PrivateRedis.create();
    bus = await RedisEventBus.connect(redis.url, log);
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await bus?.close();
    await redis?.kill();
  });

  it('a publish that timed out reaches each socket once, through Redis, not also from here', async () => {
    const got: Delivery[] = [];
    await bus.subscribe('alice', (delivery) => got.push(delivery));
    // Longer than the publish's timeout: Redis still publishes it when the pause ends.
    await admin.call('CLIENT', 'PAUSE', '1200', 'WRITE');
    bus.publish(['alice'], { type: 't', n: 1 });
    await waitUntil('the delivery', async () => got.length > 0, 5_000);
    // Published after the first arrived, through the same connection: when it arrives, so has
    // anything else the first one led to.
    bus.publish(['alice'], { type: 't', n: 2 });
    await waitUntil('the second delivery', async () => got.some((d) => d.event.n === 2), 5_000);
    expect(got.map((d) => d.event.n)).toEqual([1, 2]);
  });
});
