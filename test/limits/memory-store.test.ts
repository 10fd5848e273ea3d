import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { EVICTION_SAMPLE, LIGHT } from '../../src/least-recently-used.js';
import { MAX_KEYS, MemoryWindowStore } from '../../src/limits/memory-store.js';
import type { Rule } from '../../src/limits/sliding-window.js';

// The store alone: it has no database, so there is no backend to loop over.

const NOW = 1_700_000_000_000;
const ONE_A_MINUTE: readonly Rule[] = [{ limit: 1, windowMs: 60_000 }];
const MANY: readonly Rule[] = [{ limit: 1_000, windowMs: 60_000 }];
const ipKey = (i: number) => `auth-requests:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;

describe('the in-memory limit store keeps at most a bounded number of keys', () => {
  const stores: MemoryWindowStore[] = [];
  const open = (maxKeys?: number) => {
    const store = new MemoryWindowStore(() => NOW, maxKeys);
    stores.push(store);
    return store;
  };
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });

  it(`keeps ${MAX_KEYS} keys by default, however many addresses come`, async () => {
    const store = open();
    const count = MAX_KEYS + 2_000;
    for (let i = 0; i < count; i++) {
      await store.consume(ipKey(i), MANY, NOW);
      expect(store.keyCount).toBeLessThanOrEqual(MAX_KEYS);
    }
    expect(store.keyCount).toBe(MAX_KEYS);
    // The first 2,000 went first; the last MAX_KEYS are all there.
    expect(store.has(ipKey(1_999))).toBe(false);
    expect(store.has(ipKey(2_000))).toBe(true);
    expect(store.has(ipKey(count - 1))).toBe(true);
  });

  it('drops the least recently used key first: a key used again survives', async () => {
    const store = open(3);
    await store.consume('a', ONE_A_MINUTE, NOW);
    await store.consume('b', ONE_A_MINUTE, NOW);
    await store.record('c', 60_000, NOW);
    // `a` is refused (one a minute): still a use, and its count must not be lost.
    expect((await store.consume('a', ONE_A_MINUTE, NOW)).allowed).toBe(false);

    await store.consume('d', ONE_A_MINUTE, NOW);
    expect(['a', 'b', 'c', 'd'].filter((key) => store.has(key))).toEqual(['a', 'c', 'd']);
    await store.consume('e', ONE_A_MINUTE, NOW);
    expect(['a', 'b', 'c', 'd', 'e'].filter((key) => store.has(key))).toEqual(['a', 'd', 'e']);
    expect((await store.consume('a', ONE_A_MINUTE, NOW)).allowed).toBe(false);
  });

  it('keeps a locked-out key alive while it is tried, through a flood of new keys', async () => {
    const store = open(100);
    expect((await store.consume('login-failures:victim', ONE_A_MINUTE, NOW)).allowed).toBe(true);
    for (let i = 0; i < 1_000; i++) {
      await store.consume(`auth-requests:flood-${i}`, MANY, NOW);
      if (i % 50 === 0) {
        const attempt = await store.consume('login-failures:victim', ONE_A_MINUTE, NOW);
        expect(attempt.allowed).toBe(false);
      }
    }
    expect(store.keyCount).toBe(100);
  });

  it('matches a least-recently-used model, sparing counters of several events, for any calls', async () => {
    const key = fc.integer({ min: 0, max: 11 }).map((n) => `k${n}`);
    const call = fc.oneof(
      fc.record({ kind: fc.constant('consume' as const), key }),
      fc.record({ kind: fc.constant('record' as const), key }),
      fc.record({ kind: fc.constant('clear' as const), key }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 10 }), fc.array(call), async (bound, calls) => {
        const store = open(bound);
        // Least recently used first, with the events each holds (all inside their window).
        const model: [string, number][] = [];
        for (const { kind, key } of calls) {
          const index = model.findIndex(([held]) => held === key);
          const events = index === -1 ? 0 : model.splice(index, 1)[0]![1];
          if (kind === 'clear') {
            await store.clear(key);
          } else {
            if (kind === 'consume') await store.consume(key, MANY, NOW);
            else await store.record(key, 60_000, NOW);
            if (index === -1 && model.length >= bound) evictLightOldest(model);
            model.push([key, events + 1]);
          }
          expect(store.keyCount).toBeLessThanOrEqual(bound);
          expect(store.keyCount).toBe(model.length);
          for (const [held] of model) expect(store.has(held)).toBe(true);
        }
      }),
    );
  });

  it('keeps a counter near its limit while its owner waits out a flood of new addresses', async () => {
    // The attack it stops: nine wrong guesses, a pause in which requests from new addresses push
    // out the account's counter (each adds a key of one event), then nine more with a fresh one.
    const store = open(100);
    const TEN_A_MINUTE: readonly Rule[] = [{ limit: 10, windowMs: 60_000 }];
    for (let i = 0; i < 9; i++)
      expect((await store.consume('login-failures:victim', TEN_A_MINUTE, NOW)).allowed).toBe(true);
    for (let i = 0; i < 1_000; i++) await store.consume(ipKey(i), MANY, NOW);
    expect(store.keyCount).toBe(100);
    expect((await store.consume('login-failures:victim', TEN_A_MINUTE, NOW)).allowed).toBe(true);
    expect((await store.consume('login-failures:victim', TEN_A_MINUTE, NOW)).allowed).toBe(false);
  });

  it('still drops a counter whose events have all aged out, however many it held', async () => {
    let now = NOW;
    const store = new MemoryWindowStore(() => now, 10);
    stores.push(store);
    for (let i = 0; i < 9; i++) await store.consume('login-failures:old', MANY, now);
    now += 61_000;
    for (let i = 0; i < 10; i++) await store.consume(ipKey(i), MANY, now);
    expect(store.has('login-failures:old')).toBe(false);
  });
});

/**
 * The store's eviction on the plain model: from the oldest key on, up to EVICTION_SAMPLE keys
 * until one holds at most LIGHT events; the one with fewest goes (the oldest among equals) and the
 * others looked at become the most recently used.
 */
function evictLightOldest(model: [string, number][]): void {
  let seen = 1;
  let victim = 0;
  while (model[victim]![1] > LIGHT && seen < Math.min(EVICTION_SAMPLE, model.length)) {
    if (model[seen]![1] < model[victim]![1]) victim = seen;
    seen += 1;
  }
  const looked = model.splice(0, seen);
  looked.splice(victim, 1);
  model.push(...looked);
}
