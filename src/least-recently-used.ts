/**
 * A bounded map kept in order of use: `get` and `set` make a key the most recently used, and a
 * `set` beyond `capacity` first drops the least recently used key. The per-process limit store,
 * the verified-token cache and the directory's memories are each one of these.
 *
 * The least recently used key comes from a live iterator over the map's keys. A Map iterates in
 * insertion order, its iterator only ever moves forward, and every key behind it was evicted or
 * moved to the end (re-inserted), so its next key is the oldest. A fresh `keys().next()` per
 * eviction walked every hole that moves leave at the front of V8's table: ~5 µs per eviction at
 * 10,000 keys, ~4 % of a chat send's CPU in the bench.
 *
 * But a live iterator keeps every table the map has outgrown or compacted since the iterator last
 * moved (V8 chains them so that it can follow), and a `get` compacts the table every few moves
 * when the map holds few keys: idle, it held 39 MiB after a million reads of ten keys, and the
 * service's verified-token cache, which never evicts below 15,000 tokens, grew by ~20 MiB over
 * the bench's account scenarios. So the iterator is made at an eviction and let go once
 * `IDLE_OPERATIONS` changes pass without one: it stays alive through runs of evictions (a full
 * map under churn), and the walk of holes is paid at most once per that many changes.
 */
const IDLE_OPERATIONS = 1_024;

export class LeastRecentlyUsed<K, V> {
  private readonly entries = new Map<K, V>();
  private oldest: MapIterator<K> | undefined;
  /** Changes since the last eviction. */
  private idle = 0;

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
    this.changed();
    return value;
  }

  /** The value, its place in the order unchanged. */
  peek(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.capacity) this.evictOldest();
    else this.changed();
    this.entries.set(key, value);
  }

  delete(key: K): void {
    if (this.entries.delete(key)) this.changed();
  }

  clear(): void {
    this.entries.clear();
    this.oldest = undefined;
  }

  /** Least recently used first; deleting while iterating is allowed. */
  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries.entries();
  }

  private evictOldest(): void {
    this.idle = 0;
    let next = this.oldest?.next();
    // An exhausted iterator stays exhausted, even once keys are added again.
    if (next === undefined || next.done === true) next = (this.oldest = this.entries.keys()).next();
    if (next.done !== true) this.entries.delete(next.value);
  }

  private changed(): void {
    if (this.oldest !== undefined && ++this.idle > IDLE_OPERATIONS) this.oldest = undefined;
  }
}
