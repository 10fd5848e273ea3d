import { LeastRecentlyUsed } from '../least-recently-used.js';
import {
  decideAll,
  memoryEventTime,
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
 * At most this many keys of each kind are kept, so clients that each send one request from a new
 * address (or try a new e-mail address) cannot grow the store without bound. Measured with
 * `node --expose-gc` (heap after GC, 50,000 keys as policies.ts builds them, one event each): 310
 * bytes per IPv6 /64 key, 200 per IPv4 key, 260 per account key. So 10,000 keys of random
 * addresses take about 3 MB, and the ten kinds policies.ts counts 22-30 MB if every one of them
 * is flooded at once with such keys. A key holding a full per-IP budget (300 events) takes 3.3
 * KB, but filling 10,000 of them takes 3 million requests a minute.
 */
export const MAX_KEYS = 10_000;

/**
 * Per-process counters: the default, and the fallback while Redis is away. Each kind of key (the
 * text before its first `:`, e.g. `auth-requests`, `login-failures`) has a map of its own, kept in
 * order of use (a used key is moved to the end), and a new key beyond `maxKeys` drops the least
 * recently used one of its kind: a client being refused keeps its key alive by knocking.
 *
 * One map for every kind let one kind push out another: requests from 10,000 new addresses (an
 * IPv6 /48 holds 65,536 of the /64s that per-IP limits count by) pushed out an account's
 * failed-login counter between two bursts of guesses, which then went on against a fresh one; and
 * above ~170 chat sends a second, their one-minute key claims pushed out users' send budgets. Now
 * only new keys of its own kind push a counter out: for an account's failures, failed logins on
 * 10,000 other addresses, each of which costs the service a hash (about a minute of both cores).
 */
export class MemoryWindowStore implements SlidingWindowStore {
  private readonly kinds = new Map<string, LeastRecentlyUsed<string, Events>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly clock: () => number = Date.now,
    private readonly maxKeys = MAX_KEYS,
  ) {
    // Forget keys whose events have all aged out, so memory follows live traffic only.
    this.sweeper = setInterval(() => this.sweep(this.clock()), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  async consume(key: string, rules: readonly Rule[], now: number): Promise<Decision> {
    return singleDecision(await this.consumeAll([{ key, rules }], now));
  }

  async consumeAll(
    counters: readonly Counter[],
    now: number,
    event = String(now),
  ): Promise<JointDecision> {
    const entries = counters.map(({ key }) => this.kindOf(key).get(key));
    const decisions = counters.map(({ rules }, i) =>
      decideAll(entries[i]?.times ?? [], rules, now),
    );
    const refused = decisions.findIndex((decision) => !decision.allowed);
    if (refused !== -1) {
      const retryAfterSeconds = Math.max(...decisions.map((d) => d.retryAfterSeconds));
      return { allowed: false, refused, retryAfterSeconds };
    }
    counters.forEach(({ key, rules }, i) => this.add(key, entries[i], longestWindow(rules), now));
    return { allowed: true, event };
  }

  async record(key: string, retainMs: number, now: number): Promise<void> {
    this.add(key, this.kindOf(key).get(key), retainMs, now);
  }

  async release(key: string, event: string): Promise<void> {
    const time = memoryEventTime(event);
    const times = this.heldKindOf(key)?.peek(key)?.times;
    const index = time === undefined ? -1 : (times?.lastIndexOf(time) ?? -1);
    if (times !== undefined && index !== -1) times.splice(index, 1);
  }

  async releaseAll(keys: readonly string[], event: string): Promise<void> {
    for (const key of keys) await this.release(key, event);
  }

  async clear(key: string): Promise<void> {
    this.heldKindOf(key)?.delete(key);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.kinds.clear();
  }

  /** Keys held, of every kind. */
  get keyCount(): number {
    let count = 0;
    for (const keys of this.kinds.values()) count += keys.size;
    return count;
  }

  has(key: string): boolean {
    return this.heldKindOf(key)?.has(key) ?? false;
  }

  /** The map of the key's kind, made on its first key. */
  private kindOf(key: string): LeastRecentlyUsed<string, Events> {
    const kind = kindName(key);
    let keys = this.kinds.get(kind);
    if (keys === undefined) this.kinds.set(kind, (keys = new LeastRecentlyUsed(this.maxKeys)));
    return keys;
  }

  /** The map of the key's kind if it has one: reading, releasing or clearing makes none. */
  private heldKindOf(key: string): LeastRecentlyUsed<string, Events> | undefined {
    return this.kinds.get(kindName(key));
  }

  /** Appends in place (times stay sorted) and drops what is past retention: no garbage per call. */
  private add(key: string, entry: Events | undefined, retainMs: number, now: number): void {
    // A one-slot array: `[]` would reserve 17 slots on the first push (130 bytes per key).
    if (entry === undefined) return this.kindOf(key).set(key, { times: [now], retainMs });
    entry.retainMs = Math.max(entry.retainMs, retainMs);
    let expired = 0;
    while (
      expired < entry.times.length &&
      (entry.times[expired] as number) <= now - entry.retainMs
    ) {
      expired++;
    }
    if (expired > 0) entry.times.splice(0, expired);
    entry.times.push(now);
  }

  private sweep(now: number): void {
    for (const keys of this.kinds.values()) {
      for (const [key, entry] of keys) {
        if ((entry.times.at(-1) ?? 0) <= now - entry.retainMs) keys.delete(key);
      }
    }
  }
}

/** A key's kind: the text before its first `:` (none: the empty kind, shared by such keys). */
function kindName(key: string): string {
  const colon = key.indexOf(':');
  return colon === -1 ? '' : key.slice(0, colon);
}
