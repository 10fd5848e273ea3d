import {
  decideAll,
  longestWindow,
  type Decision,
  type Rule,
  type SlidingWindowStore,
} from './sliding-window.js';

interface Events {
  /** Event times, ascending. */
  times: number[];
  retainMs: number;
}

const SWEEP_INTERVAL_MS = 60_000;

/** Per-process counters: the default, and the fallback while Redis is away. */
export class MemoryWindowStore implements SlidingWindowStore {
  private readonly events = new Map<string, Events>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly clock: () => number = Date.now) {
    // Forget keys whose events have all aged out, so memory follows live traffic only.
    this.sweeper = setInterval(() => this.sweep(this.clock()), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  async consume(key: string, rules: readonly Rule[], now: number): Promise<Decision> {
    const decision = decideAll(this.events.get(key)?.times ?? [], rules, now);
    if (!decision.allowed) return decision;
    this.add(key, longestWindow(rules), now);
    return { ...decision, event: String(now) };
  }

  async record(key: string, retainMs: number, now: number): Promise<void> {
    this.add(key, retainMs, now);
  }

  async release(key: string, event: string): Promise<void> {
    const times = this.events.get(key)?.times;
    const index = times?.lastIndexOf(Number(event)) ?? -1;
    if (times !== undefined && index !== -1) times.splice(index, 1);
  }

  async clear(key: string): Promise<void> {
    this.events.delete(key);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.events.clear();
  }

  /** Appends in place (times stay sorted) and drops what is past retention: no garbage per call. */
  private add(key: string, retainMs: number, now: number): void {
    let entry = this.events.get(key);
    if (entry === undefined) {
      entry = { times: [], retainMs };
      this.events.set(key, entry);
    }
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
    for (const [key, entry] of this.events) {
      if ((entry.times.at(-1) ?? 0) <= now - entry.retainMs) this.events.delete(key);
    }
  }
}
