import { LeastRecentlyUsed } from '../least-recently-used.js';
import {
  decideAll,
  longestWindow,
  singleDecision,
  type Counter,
  type Decision,
  type JointDecision,
  type Rule,
  type SlidingWindowStore,
} from './sliding-window.js';

interface Events {
  /** Event times, ascending. */
  times: number[];
  retainMs: number;
}

const SWEEP_INTERVAL_MS = 60_000;

/**
 * At most this many keys are kept, so clients that each send one request from a new address (or
 * try a new e-mail address) cannot grow the store without bound. Measured with `node --expose-gc`
 * (heap after GC, 50,000 keys as policies.ts builds them, one event each): 310 bytes per IPv6 /64
 * key, 200 per IPv4 key, 260 per account key. So 10,000 keys of random addresses take about 3 MB.
 * A key holding a full per-IP budget (300 events) takes 3.3 KB, but filling 10,000 of them takes
 * 3 million requests a minute.
 */
export const MAX_KEYS = 10_000;

/**
 * Per-process counters: the default, and the fallback while Redis is away. The map is kept in
 * order of use (a used key is moved to the end), and a new key beyond `maxKeys` drops the least
 * recently used one: a client being refused keeps its key alive by knocking.
 *
 * But not a counter that still holds more than one event while lighter ones follow it
 * (`LeastRecentlyUsed`'s `weigh`): otherwise whoever can send requests from enough new addresses
 * (an IPv6 /48 holds 65,536 of the /64s that per-IP limits count by) could push out an account's
 * failed-login counter between two bursts of guesses, and guess on with a fresh one. A flood of
 * new keys (one event each) now pushes out only keys of one event; to push out a counter of n
 * events, the keys after it must each hold at least as many.
 */
export class MemoryWindowStore implements SlidingWindowStore {
  private readonly events: LeastRecentlyUsed<string, Events>;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly clock: () => number = Date.now,
    maxKeys = MAX_KEYS,
  ) {
    this.events = new LeastRecentlyUsed(maxKeys, (entry) => liveEvents(entry, this.clock()));
    // Forget keys whose events have all aged out, so memory follows live traffic only.
    this.sweeper = setInterval(() => this.sweep(this.clock()), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  async consume(key: string, rules: readonly Rule[], now: number): Promise<Decision> {
    return singleDecision(await this.consumeAll([{ key, rules }], now));
  }

  async consumeAll(counters: readonly Counter[], now: number): Promise<JointDecision> {
    const entries = counters.map(({ key }) => this.events.get(key));
    for (const [index, { rules }] of counters.entries()) {
      const decision = decideAll(entries[index]?.times ?? [], rules, now);
      if (!decision.allowed) {
        return { allowed: false, refused: index, retryAfterSeconds: decision.retryAfterSeconds };
      }
    }
    counters.forEach(({ key, rules }, i) => this.add(key, entries[i], longestWindow(rules), now));
    return { allowed: true, event: String(now) };
  }

  async record(key: string, retainMs: number, now: number): Promise<void> {
    this.add(key, this.events.get(key), retainMs, now);
  }

  async release(key: string, event: string): Promise<void> {
    const times = this.events.peek(key)?.times;
    const index = times?.lastIndexOf(Number(event)) ?? -1;
    if (times !== undefined && index !== -1) times.splice(index, 1);
  }

  async releaseAll(keys: readonly string[], event: string): Promise<void> {
    for (const key of keys) await this.release(key, event);
  }

  async clear(key: string): Promise<void> {
    this.events.delete(key);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.events.clear();
  }

  get keyCount(): number {
    return this.events.size;
  }

  has(key: string): boolean {
    return this.events.has(key);
  }

  /** Appends in place (times stay sorted) and drops what is past retention: no garbage per call. */
  private add(key: string, entry: Events | undefined, retainMs: number, now: number): void {
    // A one-slot array: `[]` would reserve 17 slots on the first push (130 bytes per key).
    if (entry === undefined) return this.events.set(key, { times: [now], retainMs });
    entry.retainMs = Math.max(entry.retainMs, retainMs);
    const expired = expiredEvents(entry, now);
    if (expired > 0) entry.times.splice(0, expired);
    entry.times.push(now);
  }

  private sweep(now: number): void {
    for (const [key, entry] of this.events) {
      if ((entry.times.at(-1) ?? 0) <= now - entry.retainMs) this.events.delete(key);
    }
  }
}

/** How many of the entry's first events are past its retention (its times are ascending). */
function expiredEvents({ times, retainMs }: Events, now: number): number {
  let expired = 0;
  while (expired < times.length && (times[expired] as number) <= now - retainMs) expired++;
  return expired;
}

/** The events still inside the entry's retention: what dropping the entry would forget. */
const liveEvents = (entry: Events, now: number) => entry.times.length - expiredEvents(entry, now);
