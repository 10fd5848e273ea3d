import { once } from 'node:events';
import fc from 'fast-check';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Delivery, EventBus } from '../../src/events/bus.js';
import { publishAccountDeleted, publishSessionsEnded } from '../../src/events/account-events.js';
import { openEventBus } from '../../src/events/open-bus.js';
import { loadConfig } from '../../src/config.js';
import { MemoryEventBus } from '../../src/events/memory-bus.js';
import { RedisEventBus } from '../../src/events/redis-bus.js';
import type { SilenceCheck } from '../../src/redis.js';
import { canRunPrivateRedis, PrivateRedis } from '../scale/private-servers.js';
import { waitUntil } from '../scale/service-process.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const log = pino({ level: 'silent' });
const redisUrl = process.env.TEST_REDIS_URL;

interface BusKind {
  readonly name: string;
  /** Two buses as two instances would hold them (the same one twice without Redis). */
  pair(): Promise<[EventBus, EventBus]>;
}

const kinds: BusKind[] = [
  {
    name: 'memory',
    pair: async () => {
      const bus = new MemoryEventBus(log);
      return [bus, bus];
    },
  },
];
if (redisUrl) {
  kinds.push({
    name: 'redis',
    pair: () =>
      Promise.all([RedisEventBus.connect(redisUrl, log), RedisEventBus.connect(redisUrl, log)]),
  });
}

const user = () => `user-${Math.random().toString(36).slice(2)}`;

describe.each(kinds)('event bus ($name)', (kind) => {
  let buses: EventBus[] = [];
  afterEach(async () => {
    await Promise.all([...new Set(buses)].map((b) => b.close()));
    buses = [];
  });
  const open = async () => {
    const pair = await kind.pair();
    buses.push(...pair);
    return pair;
  };

  it("delivers an event to each subscribed member's listeners once, and to nobody else", async () => {
    const [a, b] = await open();
    const [alice, bob, eve] = [user(), user(), user()];
    const got: Delivery[] = [];
    await b.subscribe(alice, (d) => got.push(d));
    await b.subscribe(bob, (d) => got.push(d));
    await b.subscribe(eve, (d) => got.push(d));
    a.publish([alice, bob], { type: 'message.created', version: 1 });
    await waitUntil('both deliveries', async () => got.length >= 2, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(got.map((d) => d.userId).sort()).toEqual([alice, bob].sort());
    expect(got[0]?.event).toEqual({ type: 'message.created', version: 1 });
    expect(got[0]?.publishedAt).toBeGreaterThan(Date.now() - 5_000);
  });

  it('stops delivering after unsubscribe, and keeps other listeners of the user', async () => {
    const [a, b] = await open();
    const alice = user();
    const first: number[] = [];
    const second: number[] = [];
    const stopFirst = await b.subscribe(alice, (d) => first.push(d.event.n as number));
    await b.subscribe(alice, (d) => second.push(d.event.n as number));
    a.publish([alice], { type: 't', n: 1 });
    await waitUntil('first event', async () => second.length === 1, 5_000);
    stopFirst();
    a.publish([alice], { type: 't', n: 2 });
    await waitUntil('second event', async () => second.length === 2, 5_000);
    expect(first).toEqual([1]);
    expect(second).toEqual([1, 2]);
  });

  it('a failing listener does not starve the others', async () => {
    const [a, b] = await open();
    const alice = user();
    const got: unknown[] = [];
    await b.subscribe(alice, () => {
      throw new Error('broken socket');
    });
    await b.subscribe(alice, (d) => got.push(d.event));
    a.publish([alice], { type: 't' });
    await waitUntil('delivery', async () => got.length === 1, 5_000);
  });

  it("keeps the order of one publisher's events (property)", async () => {
    const [a, b] = await open();
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer(), { minLength: 1, maxLength: 60 }), async (values) => {
        const alice = user();
        const got: unknown[] = [];
        const stop = await b.subscribe(alice, (d) => got.push(d.event.value));
        for (const value of values) a.publish([alice], { type: 't', value });
        await waitUntil('every event', async () => got.length >= values.length, 5_000);
        stop();
        expect(got).toEqual(values);
      }),
      { numRuns: 20, seed: 7 },
    );
  });
});

describe.skipIf(!redisUrl)('event bus (redis): publishes of one moment', () => {
  it('leave in one pipeline (one write), in the order they were published', async () => {
    const [a, b] = await Promise.all([
      RedisEventBus.connect(redisUrl as string, log),
      RedisEventBus.connect(redisUrl as string, log),
    ]);
    const pipelines = vi.spyOn(Redis.prototype, 'pipeline');
    try {
      const [alice, bob] = [user(), user()];
      const got: Delivery[] = [];
      await b.subscribe(alice, (d) => got.push(d));
      await b.subscribe(bob, (d) => got.push(d));
      pipelines.mockClear();
      // A sent chat message: one event for each member, each as that member sees it.
      a.publish([alice], { type: 'message.created', version: 1 });
      a.publish([bob], { type: 'message.created', version: 1, for: 'bob' });
      a.publish([alice], { type: 'message.created', version: 2 });
      await waitUntil('three deliveries', async () => got.length >= 3, 5_000);
      expect(pipelines).toHaveBeenCalledTimes(1);
      expect(got.map((d) => [d.userId === alice ? 'alice' : 'bob', d.event.version])).toEqual([
        ['alice', 1],
        ['bob', 1],
        ['alice', 2],
      ]);
    } finally {
      pipelines.mockRestore();
      await Promise.all([a.close(), b.close()]);
    }
  });
});

// On a Redis of its own: the resync it causes reaches every instance on that Redis, and other
// test files' sockets on the shared one must not get it.
/**
 * Runs `test` on a Redis of its own; every bus it connects (through `connect`, to that Redis or to
 * `url`) is closed after it, and the server killed (thawed first, if the test froze it).
 */
async function onPrivateRedis(
  test: (
    redis: PrivateRedis,
    connect: (url?: string, silenceCheck?: SilenceCheck) => Promise<RedisEventBus>,
  ) => Promise<void>,
): Promise<void> {
  const redis = await PrivateRedis.create();
  const buses: RedisEventBus[] = [];
  const connect = async (url = redis.url, silenceCheck?: SilenceCheck) => {
    const bus = await RedisEventBus.connect(url, log, Date.now, { silenceCheck });
    buses.push(bus);
    return bus;
  };
  try {
    await test(redis, connect);
  } finally {
    redis.thaw();
    await Promise.all(buses.map((bus) => bus.close()));
    await redis.kill();
  }
}

describe.skipIf(!redisUrl)(
  'event bus (redis): what other clients of a shared Redis publish',
  () => {
    it('passes on only events of our shape: null, numbers, arrays or objects without a type are dropped', async () => {
      const bus = await RedisEventBus.connect(redisUrl as string, log);
      const other = new Redis(redisUrl as string);
      try {
        const alice = user();
        const got: Delivery[] = [];
        await bus.subscribe(alice, (d) => got.push(d));
        for (const payload of [
          'null',
          '42',
          '[]',
          '{"t":1}',
          '{"t":1,"e":null}',
          '{"t":1,"e":{}}',
          // A typed event without our publication time, or with one that is not a number.
          '{"e":{"type":"message.created","foreign":true}}',
          '{"t":"1","e":{"type":"message.created","foreign":true}}',
        ])
          await other.publish(`events:user:${alice}`, payload);
        await other.publish(`events:user:${alice}`, '{"t":1,"e":{"type":"message.created"}}');
        await waitUntil('the one event', async () => got.length > 0, 5_000);
        await new Promise((resolve) => setTimeout(resolve, 50)); // anything else would be in too
        expect(got.map((d) => d.event)).toEqual([{ type: 'message.created' }]);
      } finally {
        other.disconnect();
        await bus.close();
      }
    });
  },
);

describe.skipIf(!redisUrl)('event bus (redis): REDIS_PREFIX', () => {
  it('keeps deployments on one Redis apart: an event reaches the instances of its own prefix only', async () => {
    const [staging, production] = [`${user()}:`, `${user()}:`];
    const connect = (prefix: string) =>
      RedisEventBus.connect(redisUrl as string, log, Date.now, { prefix });
    const [publisher, sameDeployment, otherDeployment] = await Promise.all([
      connect(staging),
      connect(staging),
      connect(production),
    ]);
    try {
      const alice = user();
      const same: Delivery[] = [];
      const other: Delivery[] = [];
      await sameDeployment.subscribe(alice, (d) => same.push(d));
      await otherDeployment.subscribe(alice, (d) => other.push(d));
      publisher.publish([alice], { type: 'message.created' });
      await waitUntil('the same prefix gets it', async () => same.length > 0, 5_000);
      await new Promise((resolve) => setTimeout(resolve, 100)); // the other would have it too
      expect(other).toEqual([]);
    } finally {
      await Promise.all([publisher, sameDeployment, otherDeployment].map((bus) => bus.close()));
    }
  });

  it("hears a resync on its own deployment's channel, not on another's", async () => {
    const [mine, theirs] = [`${user()}:`, `${user()}:`];
    const bus = await RedisEventBus.connect(redisUrl as string, log, Date.now, { prefix: mine });
    const other = new Redis(redisUrl as string);
    try {
      let resyncs = 0;
      bus.onResync(() => (resyncs += 1));
      await other.publish(`${theirs}events:resync`, '');
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // past the 500 ms gathering
      expect(resyncs).toBe(0);
      // An instance of this deployment that lost publishes says so on the prefixed channel.
      await other.publish(`${mine}events:resync`, '');
      await waitUntil('the resync', async () => resyncs === 1, 5_000);
    } finally {
      other.disconnect();
      await bus.close();
    }
  });

  it('is what the service opens with REDIS_URL and REDIS_PREFIX', async () => {
    const prefix = `${user()}:`;
    const config = loadConfig({ REDIS_URL: redisUrl as string, REDIS_PREFIX: prefix });
    const bus = await openEventBus(config, Date.now, log);
    const other = new Redis(redisUrl as string);
    try {
      const alice = user();
      const got: Delivery[] = [];
      await bus.subscribe(alice, (d) => got.push(d));
      const message = (n: number) => JSON.stringify({ t: Date.now(), e: { type: 't', n } });
      await other.publish(`events:user:${alice}`, message(1)); // another deployment's channel
      await other.publish(`${prefix}events:user:${alice}`, message(2));
      await waitUntil('the event on its own channel', async () => got.length > 0, 5_000);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(got.map((d) => d.event.n)).toEqual([2]);
    } finally {
      other.disconnect();
      await bus.close();
    }
  });
});

describe.skipIf(!redisUrl)("event bus (redis): a user's channel", () => {
  it('is left once the last listener of the user on this instance is gone, not before', async () => {
    const bus = await RedisEventBus.connect(redisUrl as string, log);
    const admin = new Redis(redisUrl as string);
    const subscribers = async (channel: string) =>
      Number(((await admin.pubsub('NUMSUB', channel)) as unknown[])[1]);
    try {
      const alice = user();
      const channel = `events:user:${alice}`;
      const stopFirst = await bus.subscribe(alice, () => undefined);
      const stopSecond = await bus.subscribe(alice, () => undefined);
      expect(await subscribers(channel)).toBe(1);
      stopFirst();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await subscribers(channel)).toBe(1); // the second listener still needs it
      stopSecond();
      // Otherwise the instance keeps every user who ever had a socket here, and their traffic.
      await waitUntil('the channel left', async () => (await subscribers(channel)) === 0, 5_000);
    } finally {
      admin.disconnect();
      await bus.close();
    }
  });
});

describe.skipIf(!canRunPrivateRedis)('event bus (redis): a publish lost on one instance', () => {
  it('has every instance told to resync once Redis takes publishes again', () =>
    onPrivateRedis(async (redis, connect) => {
      const [a, b] = await Promise.all([connect(), connect()]);
      const alice = user();
      const got: Delivery[] = [];
      let resyncsOnB = 0;
      b.onResync(() => (resyncsOnB += 1));
      await b.subscribe(alice, (d) => got.push(d));
      // A's connection for publishing drops (a blip on A's side only); ioredis reconnects it.
      const publisher = (a as unknown as { publisher: Redis }).publisher; // the only way to name it
      const closed = once(publisher, 'close');
      redis.cli('CLIENT', 'KILL', 'ID', String(await publisher.client('ID')));
      // Published while A knows the connection is down (in flight, ioredis would resend it),
      // in the same task as the close: ioredis reconnects within ~50 ms.
      await closed;
      a.publish([alice], { type: 'message.created', version: 7 });
      // B either got the event or hears that it may have missed one; never neither.
      await waitUntil(
        'the event or a resync on B',
        async () => got.some((d) => d.event.version === 7) || resyncsOnB > 0,
        5_000,
      );
    }));

  it.each([
    [
      'a session that ended',
      (bus: EventBus, userId: string) => publishSessionsEnded(bus, userId, ['a-session']),
      'session.revoked',
    ],
    ['an account deletion', publishAccountDeleted, 'account.deleted'],
  ] as const)(
    'hands %s to the publishing instance at once, even while Redis hangs',
    (_what, publish, type) =>
      onPrivateRedis(async (redis, connect) => {
        const a = await connect();
        const alice = user();
        const got: Delivery[] = [];
        await a.subscribe(alice, (d) => got.push(d));
        redis.freeze(); // no answer: the publish times out, and may yet reach Redis
        publish(a, alice);
        a.publish([alice], { type: 'message.created', version: 1 }); // a client's: never twice
        await waitUntil('the internal event', async () => got.length > 0, 2_000);
        await new Promise((resolve) => setTimeout(resolve, 700)); // past the publish's timeout
        expect(got.map((d) => d.event.type)).toEqual([type]);
      }),
  );

  it('stops announcing lost publishes once Redis has taken the announcement, however many were lost', () =>
    onPrivateRedis(async (redis, connect) => {
      const a = await connect();
      const alice = user();
      const onA: Delivery[] = [];
      await a.subscribe(alice, (d) => onA.push(d));
      await redis.kill();
      // Publishes refused in several tasks, each delivered here only and each owing a resync.
      for (let n = 1; n <= 3; n += 1) {
        await waitUntil(`local delivery ${n}`, async () => {
          a.publish([alice], { type: 't', n });
          await new Promise((resolve) => setTimeout(resolve, 50));
          return onA.some((d) => d.event.n === n);
        });
      }
      await redis.start();
      const b = await connect(); // another instance, from here on
      const got: Delivery[] = [];
      await b.subscribe(alice, (d) => got.push(d));
      await waitUntil(
        'A to publish through Redis again',
        async () => {
          a.publish([alice], { type: 't', n: 4 });
          await new Promise((resolve) => setTimeout(resolve, 100));
          return got.some((d) => d.event.n === 4);
        },
        15_000,
      );
      // The announcement is retried every 250 ms until Redis takes one; then it stops.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const watcher = new Redis(redis.url);
      try {
        let announcements = 0;
        watcher.on('message', () => (announcements += 1));
        await watcher.subscribe('events:resync');
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect(announcements).toBe(0);
      } finally {
        watcher.disconnect();
      }
    }));

  it('reconnects a subscription whose flow was cut without a word, and asks its sockets to resync', () =>
    onPrivateRedis(async (redis, connect) => {
      const proxy = await TcpProxy.start(redis.port);
      try {
        const quickCheck = { everyMs: 100, withinMs: 300 };
        const a = await connect(`redis://127.0.0.1:${proxy.port}`, quickCheck);
        const b = await connect();
        const alice = user();
        const got: Delivery[] = [];
        let resyncs = 0;
        a.onResync(() => (resyncs += 1));
        await a.subscribe(alice, (d) => got.push(d));
        b.publish([alice], { type: 'message.created', version: 1 });
        await waitUntil('the first event on A', async () => got.length === 1, 5_000);
        // A's connections still look open to A, but carry nothing any more.
        proxy.silenceOpenFlows();
        b.publish([alice], { type: 'message.created', version: 2 });
        await waitUntil('A told to resync', async () => resyncs > 0, 5_000);
        b.publish([alice], { type: 'message.created', version: 3 });
        await waitUntil(
          'an event on A again',
          async () => got.some((d) => d.event.version === 3),
          5_000,
        );
      } finally {
        await proxy.close();
      }
    }));

  it('asks its sockets to resync when a subscription takes hold after the caller stopped waiting', () =>
    onPrivateRedis(async (redis, connect) => {
      const bus = await connect();
      let resyncs = 0;
      bus.onResync(() => (resyncs += 1));
      redis.freeze(); // slow, not gone: the connection stays up
      const started = performance.now();
      await bus.subscribe(user(), () => undefined);
      expect(performance.now() - started).toBeLessThan(1_500);
      redis.thaw();
      await waitUntil('a resync', async () => resyncs > 0, 5_000);
    }));

  it('tells its sockets once for reasons that come together, and at most once per 5 s', () =>
    onPrivateRedis(async (redis, connect) => {
      const bus = await connect();
      const resyncs: number[] = [];
      bus.onResync(() => resyncs.push(performance.now()));
      const started = performance.now();
      // Two instances saying they lost publishes, a moment apart.
      redis.cli('PUBLISH', 'events:resync', '');
      redis.cli('PUBLISH', 'events:resync', '');
      await waitUntil('the first resync', async () => resyncs.length === 1, 5_000);
      redis.cli('PUBLISH', 'events:resync', ''); // a third, soon after it
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(resyncs).toHaveLength(1);
      await waitUntil('the second resync', async () => resyncs.length === 2, 10_000);
      expect((resyncs[1] as number) - (resyncs[0] as number)).toBeGreaterThanOrEqual(4_900);
      expect((resyncs[0] as number) - started).toBeGreaterThanOrEqual(450);
    }));
});
