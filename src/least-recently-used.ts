/**
 * A bounded map kept in order of use: `get` and `set` make a key the most recently used, and a
 * `set` beyond `capacity` first drops the least recently used key. The per-process limit store,
 * the verified-token cache and the directory's memories are each one of these.
 *
 * The least recently used key comes from one live iterator over the map's keys. A Map iterates in
 * insertion order, its iterator only ever moves forward, and every key behind it was evicted or
 * moved to the end (re-inserted), so its next key is the oldest. A fresh `keys().next()` per
 * eviction walked every hole that moves leave at the front of V8's table: ~5 µs per eviction at
 * 10,000 keys, ~4 % of a chat send's CPU in the bench.
 */
export class LeastRecentlyUsed<K, V> {
  private readonly entries = new Map<K, V>();
  private oldest: MapIterator<K> = this.entries.keys();

  constructor(private readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be a positive integer, not ${capacity}`);
  }

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** The value, now the most recently used. */
  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  /** The value, its place in the order unchanged. */
  peek(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.capacity) this.evictOldest();
    this.entries.set(key, value);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** Least recently used first; deleting while iterating is allowed. */
  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries.entries();
  }

  private evictOldest(): void {
    let next = this.oldest.next();
    // An exhausted iterator stays exhausted, even once keys are added again.
    if (next.done === true) next = (this.oldest = this.entries.keys()).next();
    if (next.done !== true) this.entries.delete(next.value);
  }
}
