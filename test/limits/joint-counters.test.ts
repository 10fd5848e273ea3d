import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryWindowStore } from '../../src/limits/memory-store.js';
import type { Counter, Rule, SlidingWindowStore } from '../../src/limits/sliding-window.js';

// consumeAll, which a login uses for its per-IP and per-account counters (one Redis round trip):
// all or nothing, on the memory store and, with TEST_REDIS_URL, on Redis.

const NOW = 1_700_000_000_000;
const TWO_A_MINUTE: readonly Rule[] = [{ limit: 2, windowMs: 60_000 }];
const ONE_A_MINUTE_TEN_AN_HOUR: readonly Rule[] = [
  { limit: 10, windowMs: 3_600_000 },
  { limit: 1, windowMs: 60_000 },
];

interface StoreUnderTest {
  readonly name: string;
  open(): Promise<SlidingWindowStore>;
}

const stores: StoreUnderTest[] = [
  { name: 'memory', open: async () => new MemoryWindowStore(() => NOW) },
];
const redisUrl = process.env.TEST_REDIS_URL;
if (redisUrl) {
  stores.push({
    name: 'redis',
    async open() {
      const { RedisWindowStore } = await import('../../src/limits/redis-store.js');
      return RedisWindowStore.connect(redisUrl, pino({ level: 'silent' }));
    },
  });
}

describe.each(stores)('consumeAll on several counters ($name)', ({ open }) => {
  const opened: SlidingWindowStore[] = [];
  const store = async () => {
    const s = await open();
    opened.push(s);
    return s;
  };
  afterAll(async () => {
    await Promise.all(opened.map((s) => s.close()));
  });
  // Keys of their own in a shared Redis.
  const counters = (): [Counter, Counter] => {
    const run = randomBytes(6).toString('hex');
    return [
      { key: `test-ip:${run}`, rules: TWO_A_MINUTE },
      { key: `test-account:${run}`, rules: ONE_A_MINUTE_TEN_AN_HOUR },
    ];
  };

  it('records one event in every counter, and releaseAll takes it back from each', async () => {
    const s = await store();
    const [ip, account] = counters();
    const first = await s.consumeAll([ip, account], NOW);
    expect(first.allowed).toBe(true);
    expect((await s.consume(account.key, account.rules, NOW + 1)).allowed).toBe(false);

    if (!first.allowed) throw new Error('unreachable');
    await s.releaseAll([ip.key, account.key], first.event);
    // Both budgets are whole again: the account's one a minute, the IP's two.
    expect((await s.consumeAll([ip, account], NOW + 2)).allowed).toBe(true);
    expect((await s.consume(ip.key, ip.rules, NOW + 3)).allowed).toBe(true);
    expect((await s.consume(ip.key, ip.rules, NOW + 4)).allowed).toBe(false);
  });

  it('refuses with the first counter at a limit, and then records in none', async () => {
    const s = await store();
    const [ip, account] = counters();
    expect((await s.consume(account.key, account.rules, NOW)).allowed).toBe(true);

    const refused = await s.consumeAll([ip, account], NOW + 20_000);
    // The account's one-a-minute rule: its event ages out 40 s later.
    expect(refused).toEqual({ allowed: false, refused: 1, retryAfterSeconds: 40 });
    // The IP counter took nothing: both of its two slots are left.
    expect((await s.consume(ip.key, ip.rules, NOW + 20_001)).allowed).toBe(true);
    expect((await s.consume(ip.key, ip.rules, NOW + 20_002)).allowed).toBe(true);

    const ipFull = await s.consumeAll([ip, account], NOW + 20_003);
    expect(ipFull).toMatchObject({ allowed: false, refused: 0 });
    // Nor did the account counter, when the IP refused: a minute on, it takes one again.
    expect((await s.consume(account.key, account.rules, NOW + 60_001)).allowed).toBe(true);
  });

  it('answers the wait until every rule allows one more: the hour’s, not the minute’s', async () => {
    const s = await store();
    const [, counter] = counters();
    // The minute's rule first: the first refusing rule is not the one to wait for.
    const account = { key: counter.key, rules: [...ONE_A_MINUTE_TEN_AN_HOUR].reverse() };
    // Ten in the hour, one a minute apart: the minute's rule frees in a minute, the hour's later.
    for (let minute = 0; minute < 10; minute++) {
      const decision = await s.consume(account.key, account.rules, NOW + minute * 60_000);
      expect(decision.allowed).toBe(true);
    }
    const at = NOW + 9 * 60_000 + 1_000;
    // The minute's rule alone would say 59 s; the first event leaves the hour at NOW + 3600 s.
    expect(await s.consume(account.key, account.rules, at)).toEqual({
      allowed: false,
      retryAfterSeconds: 3_600 - 9 * 60 - 1,
    });
  });

  // API.md: "`429` responses carry a `Retry-After` header (seconds)": a client that waits that long
  // must get through, so a wait that is no whole number of seconds is rounded up.
  it('answers the wait rounded up: a call made Retry-After seconds later is allowed', async () => {
    const s = await store();
    const [, account] = counters();
    expect((await s.consume(account.key, account.rules, NOW)).allowed).toBe(true);
    const refused = await s.consume(account.key, account.rules, NOW + 500); // 59.5 s to wait
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 60 });
    const later = NOW + 500 + refused.retryAfterSeconds * 1000;
    expect((await s.consume(account.key, account.rules, later)).allowed).toBe(true);
  });

  it('answers the longest wait of every counter at a limit, naming the first', async () => {
    const s = await store();
    const [ip, account] = counters();
    expect((await s.consume(account.key, account.rules, NOW)).allowed).toBe(true);
    expect((await s.consume(ip.key, ip.rules, NOW + 50_000)).allowed).toBe(true);
    expect((await s.consume(ip.key, ip.rules, NOW + 50_001)).allowed).toBe(true);
    // The IP frees at NOW + 110 s, the account at NOW + 60 s: the IP's wait, the IP named.
    const refused = await s.consumeAll([ip, account], NOW + 55_000);
    expect(refused).toEqual({ allowed: false, refused: 0, retryAfterSeconds: 55 });
    const reversed = await s.consumeAll([account, ip], NOW + 55_000);
    expect(reversed).toEqual({ allowed: false, refused: 0, retryAfterSeconds: 55 });
  });
});
