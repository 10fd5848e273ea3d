import fc from 'fast-check';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { LeastRecentlyUsed } from '../src/least-recently-used.js';

type Op =
  | { kind: 'get' | 'peek' | 'delete'; key: number }
  | { kind: 'set'; key: number; value: number }
  | { kind: 'clear' };

const key = fc.integer({ min: 0, max: 12 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('get' as const, 'peek' as const, 'delete' as const), key }),
  fc.record({ kind: fc.constant('set' as const), key, value: fc.integer() }),
  fc.constant({ kind: 'clear' as const }),
);

/** The plain model: entries least recently used first. */
function apply(model: [number, number][], capacity: number, o: Op): number | undefined {
  const at = 'key' in o ? model.findIndex(([k]) => k === o.key) : -1;
  switch (o.kind) {
    case 'get': {
      if (at === -1) return undefined;
      const [entry] = model.splice(at, 1);
      model.push(entry!);
      return entry![1];
    }
    case 'peek':
      return at === -1 ? undefined : model[at]![1];
    case 'delete':
      if (at !== -1) model.splice(at, 1);
      return undefined;
    case 'set':
      if (at !== -1) model.splice(at, 1);
      if (model.length >= capacity) model.shift();
      model.push([o.key, o.value]);
      return undefined;
    case 'clear':
      model.length = 0;
      return undefined;
  }
}

describe('LeastRecentlyUsed', () => {
  it('refuses a capacity that could not hold a key', () => {
    for (const capacity of [0, -1, 1.5, Number.NaN])
      expect(() => new LeastRecentlyUsed(capacity)).toThrow(RangeError);
  });

  /** Runs `ops` on a map and on the plain model, comparing them after every call. */
  const matchesTheModel = (capacity: number, ops: Op[]) => {
    const lru = new LeastRecentlyUsed<number, number>(capacity);
    const model: [number, number][] = [];
    for (const o of ops) {
      const expected = apply(model, capacity, o);
      const actual =
        o.kind === 'get'
          ? lru.get(o.key)
          : o.kind === 'peek'
            ? lru.peek(o.key)
            : o.kind === 'delete'
              ? lru.delete(o.key)
              : o.kind === 'set'
                ? lru.set(o.key, o.value)
                : lru.clear();
      expect(actual).toBe(expected);
      expect([...lru]).toEqual(model);
      expect(lru.size).toBe(model.length);
    }
  };

  it('matches a plain least-recently-used list for any sequence of calls', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.array(op, { maxLength: 300 }),
        matchesTheModel,
      ),
      { numRuns: 500 },
    );
  });

  it('matches it too across long runs of reads, which let the iterator that finds the oldest go', () => {
    const mostlyReads = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant('get' as const), key }), weight: 30 },
      { arbitrary: op, weight: 1 },
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.array(mostlyReads, { minLength: 2_000, maxLength: 4_000 }),
        matchesTheModel,
      ),
      { numRuns: 20 },
    );
  });

  it('evicts in order after its iterator was let go and made again', () => {
    // An eviction makes the iterator; 2,000 reads without one let it go (after 1,024); the sets
    // that follow make it again, between reads, deletes and a clear.
    const ops: Op[] = [];
    for (let k = 0; k <= 6; k++) ops.push({ kind: 'set', key: k, value: k });
    for (let i = 0; i < 2_000; i++) ops.push({ kind: 'get', key: 1 + ((i * 7) % 6) });
    for (let round = 0; round < 3; round++) {
      for (let k = 7; k <= 12; k++) {
        ops.push({ kind: 'set', key: k, value: round * 100 + k });
        ops.push({ kind: 'get', key: (k * 5 + round) % 13 });
        if (k % 4 === 0) ops.push({ kind: 'delete', key: (k + round) % 13 });
      }
      for (let i = 0; i < 1_100; i++) ops.push({ kind: 'get', key: i % 13 });
      if (round === 1) ops.push({ kind: 'clear' });
    }
    matchesTheModel(6, ops);
  });

  it('holds no trail of outgrown tables while it reads without evicting', () => {
    // A live Map iterator keeps every table the map outgrew or compacted since it last moved: an
    // idle one held 39 MiB after a million reads of ten keys (the verified-token cache's case).
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const lru = new LeastRecentlyUsed<string, number>(10);
    for (let i = 0; i <= 10; i++) lru.set(`k${i}`, i); // the 11th evicts: the iterator exists
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 300_000; i++) lru.get(`k${1 + (i % 10)}`);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    expect(lru.size).toBe(10); // still in use: the collections above could not take it whole
    expect(grown).toBeLessThan(2 * 1024 * 1024);
  });

  it('still evicts exactly the least recently used keys after the map was rehashed many times', () => {
    // 20,000 moves leave as many holes in V8's table, which it compacts as it goes: the live
    // iterator that finds the oldest key must follow every compaction.
    const lru = new LeastRecentlyUsed<number, number>(10_000);
    for (let i = 0; i < 10_000; i++) lru.set(i, i);
    for (let i = 0; i < 20_000; i++) lru.get(i % 10_000);
    for (let i = 10_000; i < 30_000; i++) {
      lru.set(i, i);
      lru.get(i - 1);
    }
    expect(lru.size).toBe(10_000);
    expect(lru.has(29_999)).toBe(true);
    expect(lru.has(19_999)).toBe(false);
  });
});
