import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryWindowStore } from '../../src/limits/memory-store.js';
import { RedisWindowStore } from '../../src/limits/redis-store.js';
import type { Counted, SlidingWindowStore } from '../../src/limits/sliding-window.js';

// `consumeAll` counts a chat send's key claim and both its budgets in one step (one round trip to
// Redis): all of them or none. Both stores must answer alike; Redis only when TEST_REDIS_URL is set.

const NOW = 1_700_000_000_000;
const redisUrl = process.env.TEST_REDIS_URL || undefined;
const stores: { name: string; open: () => Promise<SlidingWindowStore> }[] = [
  { name: 'memory', open: async () => new MemoryWindowStore(() => NOW) },
  ...(redisUrl === undefined
    ? []
    : [{ name: 'redis', open: () => RedisWindowStore.connect(redisUrl) }]),
];

describe.each(stores)('consumeAll over several keys ($name)', ({ open }) => {
  const opened: SlidingWindowStore[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((store) => store.close()));
  });
  const fresh = async () => {
    const store = await open();
    opened.push(store);
    const prefix = `consume-all-test:${randomBytes(6).toString('hex')}`;
    const counted = (limits: number[]): Counted[] =>
      limits.map((limit, i) => ({ key: `${prefix}:${i}`, rules: [{ limit, windowMs: 10_000 }] }));
    return { store, counted };
  };

  it('records one event under every key when each is below its rules', async () => {
    const { store, counted } = await fresh();
    const keys = counted([2, 2, 2]);
    const first = await store.consumeAll(keys, NOW);
    expect(first.allowed).toBe(true);
    if (first.allowed) expect(first.events).toHaveLength(3);
    expect((await store.consumeAll(keys, NOW + 1)).allowed).toBe(true);
    // Each key now holds 2: the third is refused by the first key, and reports its wait.
    const third = await store.consumeAll(keys, NOW + 2);
    expect(third).toMatchObject({ allowed: false, refusedIndex: 0 });
    if (!third.allowed) expect(third.decision.retryAfterSeconds).toBe(10);
  });

  it('records nothing at all when one key refuses, and names the first that does', async () => {
    const { store, counted } = await fresh();
    const [a, b, c] = counted([5, 1, 5]) as [Counted, Counted, Counted];
    expect((await store.consume(b.key, b.rules, NOW)).allowed).toBe(true);
    const refused = await store.consumeAll([a, b, c], NOW + 1);
    expect(refused).toMatchObject({ allowed: false, refusedIndex: 1 });
    // Neither a nor c was counted: each still takes its full budget of 5.
    for (let i = 0; i < 5; i++) {
      expect((await store.consume(a.key, a.rules, NOW + 2)).allowed).toBe(true);
      expect((await store.consume(c.key, c.rules, NOW + 2)).allowed).toBe(true);
    }
    expect((await store.consume(a.key, a.rules, NOW + 2)).allowed).toBe(false);
  });

  it('gives back each recorded event through release', async () => {
    const { store, counted } = await fresh();
    const keys = counted([1, 1]);
    const taken = await store.consumeAll(keys, NOW);
    if (!taken.allowed) throw new Error('refused');
    expect((await store.consumeAll(keys, NOW + 1)).allowed).toBe(false);
    await Promise.all(keys.map(({ key }, i) => store.release(key, taken.events[i] as string)));
    expect((await store.consumeAll(keys, NOW + 2)).allowed).toBe(true);
  });
});
