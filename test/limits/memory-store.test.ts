import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_KEYS, MemoryWindowStore } from '../../src/limits/memory-store.js';
import { eventName, memoryEventName, type Rule } from '../../src/limits/sliding-window.js';

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

  it('keeps a locked-out key alive while it is tried, through a flood of new keys of its kind', async () => {
    const store = open(100);
    expect((await store.consume('login-failures:victim', ONE_A_MINUTE, NOW)).allowed).toBe(true);
    for (let i = 0; i < 1_000; i++) {
      await store.consume(`login-failures:flood-${i}`, MANY, NOW);
      if (i % 50 === 0) {
        const attempt = await store.consume('login-failures:victim', ONE_A_MINUTE, NOW);
        expect(attempt.allowed).toBe(false);
      }
    }
    expect(store.keyCount).toBe(100);
  });

  it("keeps each kind of key apart: a flood of one kind never pushes out another's", async () => {
    // The attack it stops: nine wrong guesses, a pause in which requests from new addresses push
    // out the account's counter, then guessing on against a fresh one.
    const store = open(100);
    const TEN_A_MINUTE: readonly Rule[] = [{ limit: 10, windowMs: 60_000 }];
    const guess = () => store.consume('login-failures:victim', TEN_A_MINUTE, NOW);
    for (let i = 0; i < 9; i++) expect((await guess()).allowed).toBe(true);
    for (let i = 0; i < 1_000; i++) {
      await store.consume(ipKey(i), MANY, NOW); // auth-requests:…
      await store.consume(`chat-key:user:${i}`, ONE_A_MINUTE, NOW);
    }
    expect(store.keyCount).toBe(201); // 100 of each flooded kind, and the victim's
    expect((await guess()).allowed).toBe(true); // the 10th
    expect((await guess()).allowed).toBe(false);
    // Keys without a kind (no `:`) make one kind of their own.
    await store.consume('plain', ONE_A_MINUTE, NOW);
    expect(store.keyCount).toBe(202);
  });

  it('matches a least-recently-used model of each kind for any sequence of calls', async () => {
    // Keys of three kinds: two named (`a:`, `b:`) and the one of keys without a `:`.
    const key = fc
      .tuple(fc.constantFrom('a:', 'b:', ''), fc.integer({ min: 0, max: 7 }))
      .map(([kind, n]) => `${kind}k${n}`);
    const call = fc.oneof(
      fc.record({ op: fc.constant('consume' as const), key }),
      fc.record({ op: fc.constant('record' as const), key }),
      fc.record({ op: fc.constant('clear' as const), key }),
    );
    const kindOf = (held: string) => held.slice(0, held.indexOf(':') + 1);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.array(call), async (bound, calls) => {
        const store = open(bound);
        const model: string[] = []; // least recently used first, every kind in one list
        for (const { op, key } of calls) {
          const index = model.indexOf(key);
          if (index !== -1) model.splice(index, 1);
          if (op === 'clear') {
            await store.clear(key);
          } else {
            if (op === 'consume') await store.consume(key, MANY, NOW);
            else await store.record(key, 60_000, NOW);
            const sameKind = model.filter((held) => kindOf(held) === kindOf(key));
            if (sameKind.length >= bound) model.splice(model.indexOf(sameKind[0]!), 1);
            model.push(key);
          }
          expect(store.keyCount).toBe(model.length);
          for (const held of model) expect(store.has(held)).toBe(true);
        }
      }),
    );
  });
});

// Beside Redis (fallback-store.ts), memory is told to take back every event, Redis's too: it
// takes back only its own, found by the time in their name, never one of Redis's that happens to
// share its millisecond.
describe('the in-memory limit store takes back its own events only', () => {
  it("releases its events by name, and ignores Redis's of the same millisecond", async () => {
    const store = new MemoryWindowStore(() => NOW);
    const key = 'login-failures:someone';
    const rules: readonly Rule[] = [{ limit: 2, windowMs: 60_000 }];
    const own = await store.consumeAll([{ key, rules }], NOW, memoryEventName(NOW));
    await store.consume(key, rules, NOW);
    expect((await store.consume(key, rules, NOW)).allowed).toBe(false);
    await store.release(key, eventName(NOW)); // Redis's, same millisecond: not memory's
    expect((await store.consume(key, rules, NOW)).allowed).toBe(false);
    await store.release(key, own.allowed ? own.event : 'never');
    expect((await store.consume(key, rules, NOW)).allowed).toBe(true);
    await store.close();
  });
});
