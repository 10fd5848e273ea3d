import type { FastifyBaseLogger } from 'fastify';
import { CircuitBreaker, PROBE_TIMING, type ProbeTiming } from './circuit-breaker.js';
import { LeastRecentlyUsed } from '../least-recently-used.js';
import { OutageLog } from '../outage-log.js';
import {
  eventName,
  longestWindow,
  memoryEventName,
  singleDecision,
  type Counter,
  type Decision,
  type JointDecision,
  type Rule,
  type SlidingWindowStore,
} from './sliding-window.js';

export interface FallbackOptions {
  readonly log: FastifyBaseLogger;
  readonly clock: () => number;
  /** Resolves when the primary answers again (for Redis: a PING). */
  readonly probe: () => Promise<unknown>;
  readonly probeTiming?: ProbeTiming;
}

/** An event memory recorded while Redis was away: its keys (and how long each keeps it), its time. */
interface CountedMeanwhile {
  readonly keys: readonly { readonly key: string; readonly retainMs: number }[];
  readonly now: number;
}

/**
 * Keys cleared, events released and counted, while Redis was away: kept to do the same there once it
 * answers (oldest dropped beyond this many of each).
 */
const MEANWHILE_MAX = 10_000;

/**
 * Redis first; after it fails, this instance's memory until a background probe finds Redis
 * answering again (see CircuitBreaker), so a hung Redis costs one command timeout, not one per
 * call. Limits then hold per instance instead of across all of them, which beats refusing every
 * login because a cache is down.
 */
export class FallbackWindowStore implements SlidingWindowStore {
  private readonly breaker: CircuitBreaker;
  private readonly outage: OutageLog;
  private readonly clock: () => number;
  /**
   * A clear is a promise (a password reset lifts the lockout), and Redis may still hold the
   * events when it answers again (it hung, or the network between us did): cleared there then.
   */
  private readonly clearedMeanwhile = new LeastRecentlyUsed<string, true>(MEANWHILE_MAX);
  /**
   * Likewise a release (a right password takes its attempt back; a replay its send): an event
   * Redis recorded before it went away must not stay counted there. Keyed by event.
   */
  private readonly releasedMeanwhile = new LeastRecentlyUsed<string, readonly string[]>(
    MEANWHILE_MAX,
  );
  /**
   * What memory counted while Redis was away, by event: written to Redis when it answers again,
   * so that the budgets spent meanwhile stay spent there (each instance's), instead of every
   * return of Redis handing out fresh ones.
   */
  private readonly countedMeanwhile = new LeastRecentlyUsed<string, CountedMeanwhile>(
    MEANWHILE_MAX,
  );

  constructor(
    private readonly primary: SlidingWindowStore,
    private readonly fallback: SlidingWindowStore,
    options: FallbackOptions,
  ) {
    this.clock = options.clock;
    // One line when Redis goes away (its message: a refused connection needs no stack), a count a
    // minute of the calls served from memory meanwhile, one line when it is back.
    this.outage = new OutageLog({
      dependency: 'Redis',
      meanwhile: "rate limits fall back to this instance's memory",
      counted: (count) => `${count} limiter ${count === 1 ? 'call' : 'calls'} served from memory`,
      log: options.log,
      level: 'warn',
      clock: options.clock,
      reportEveryMs: 60_000,
      withStack: false,
    });
    this.breaker = new CircuitBreaker(
      options.probe,
      () => {
        this.outage.answered();
        // In this order, on one connection: a clear made meanwhile removes what Redis held
        // before it, not what memory counted after it.
        this.clearInPrimary();
        this.countInPrimary();
        this.releaseInPrimary();
      },
      options.probeTiming ?? PROBE_TIMING,
    );
  }

  async consume(key: string, rules: readonly Rule[], now: number): Promise<Decision> {
    return singleDecision(await this.consumeAll([{ key, rules }], now));
  }

  consumeAll(counters: readonly Counter[], now: number): Promise<JointDecision> {
    const keys = counters.map(({ key, rules }) => ({ key, retainMs: longestWindow(rules) }));
    return this.attempt(
      keys,
      now,
      (event) => this.primary.consumeAll(counters, now, event),
      async (at, event) => {
        const decision = await this.fallback.consumeAll(counters, at, event);
        if (decision.allowed) this.countedMeanwhile.set(event, { keys, now: at });
        return decision;
      },
    );
  }

  record(key: string, retainMs: number, now: number): Promise<void> {
    return this.attempt(
      [{ key, retainMs }],
      now,
      (event) => this.primary.record(key, retainMs, now, event),
      async (at, event) => {
        await this.fallback.record(key, retainMs, at, event);
        this.countedMeanwhile.set(event, { keys: [{ key, retainMs }], now: at });
      },
    );
  }

  release(key: string, event: string): Promise<void> {
    return this.releaseAll([key], event);
  }

  /**
   * The event lives in whichever store recorded it (in the other one this is a no-op); one that
   * Redis did not take is queued for when it answers (see releasedMeanwhile).
   */
  async releaseAll(keys: readonly string[], event: string): Promise<void> {
    this.uncount(keys, event);
    if (this.breaker.isOpen) {
      this.releasedMeanwhile.set(event, keys);
      return this.fromMemory(() => this.fallback.releaseAll(keys, event));
    }
    await Promise.all([
      this.primary.releaseAll(keys, event).catch((error: unknown) => {
        if (this.breaker.trip()) this.outage.failed(error);
        this.releasedMeanwhile.set(event, keys);
      }),
      this.fallback.releaseAll(keys, event),
    ]);
  }

  /** Counts taken back (`event`'s) or cleared (every event's) meanwhile need not reach Redis. */
  private uncount(keys: readonly string[], event?: string): void {
    const events = event === undefined ? [...this.countedMeanwhile].map(([name]) => name) : [event];
    for (const name of events) {
      const counted = this.countedMeanwhile.peek(name);
      if (counted === undefined) continue;
      const left = counted.keys.filter(({ key }) => !keys.includes(key));
      if (left.length === 0) this.countedMeanwhile.delete(name);
      else this.countedMeanwhile.set(name, { ...counted, keys: left });
    }
  }

  /** Redis answers again: what memory counted meanwhile is counted there too (a failure: later). */
  private countInPrimary(): void {
    for (const [event, counted] of this.countedMeanwhile) {
      this.countedMeanwhile.delete(event);
      for (const { key, retainMs } of counted.keys) {
        this.primary.record(key, retainMs, counted.now, event).catch(() => {
          if (this.breaker.trip()) this.outage.failed(undefined);
          const left = this.countedMeanwhile.peek(event)?.keys ?? [];
          this.countedMeanwhile.set(event, { ...counted, keys: [...left, { key, retainMs }] });
        });
      }
    }
  }

  /** Redis answers again: the releases it missed meanwhile (a failure: later). */
  private releaseInPrimary(): void {
    for (const [event, keys] of this.releasedMeanwhile) {
      this.releasedMeanwhile.delete(event);
      this.primary.releaseAll(keys, event).catch(() => {
        if (this.breaker.trip()) this.outage.failed(undefined);
        this.releasedMeanwhile.set(event, keys);
      });
    }
  }

  /** Queued for Redis when it did not take it (see clearedMeanwhile), decided by the path taken. */
  async clear(key: string): Promise<void> {
    this.uncount([key]);
    if (this.breaker.isOpen) {
      this.clearedMeanwhile.set(key, true);
      return this.fromMemory(() => this.fallback.clear(key));
    }
    await Promise.all([
      this.primary.clear(key).catch((error: unknown) => {
        if (this.breaker.trip()) this.outage.failed(error);
        this.clearedMeanwhile.set(key, true);
      }),
      this.fallback.clear(key),
    ]);
  }

  /**
   * Redis answers again: what was cleared meanwhile is cleared there too (a failure: later). It
   * also clears what other instances counted there since, which errs the way the clear did.
   */
  private clearInPrimary(): void {
    for (const [key] of this.clearedMeanwhile) {
      this.clearedMeanwhile.delete(key);
      this.primary.clear(key).catch(() => {
        if (this.breaker.trip()) this.outage.failed(undefined);
        this.clearedMeanwhile.set(key, true);
      });
    }
  }

  async close(): Promise<void> {
    this.breaker.stop();
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }

  /**
   * An event counted in Redis, or else in memory (and in Redis when it answers again). Memory's
   * is named anew at the time it falls back: a call that waited for a hung Redis comes after calls
   * made since, and counted at its own older time it made memory's wait exceed the window. Redis's,
   * which may still land (a hung Redis runs the command when it wakes up), is taken back then:
   * memory's copy is the one written there.
   */
  private async attempt<T>(
    keys: CountedMeanwhile['keys'],
    now: number,
    inPrimary: (event: string) => Promise<T>,
    inMemory: (at: number, event: string) => Promise<T>,
  ): Promise<T> {
    if (this.breaker.isOpen) return this.fromMemory(() => inMemory(now, memoryEventName(now)));
    const event = eventName(now);
    try {
      return await inPrimary(event);
    } catch (error) {
      this.breaker.trip();
      this.releasedMeanwhile.set(
        event,
        keys.map(({ key }) => key),
      );
      const at = Math.max(now, this.clock());
      return this.fromMemory(() => inMemory(at, memoryEventName(at)), error);
    }
  }

  /** `cause`: the error that just opened the breaker, if this call met it. */
  private fromMemory<T>(operation: () => Promise<T>, cause?: unknown): Promise<T> {
    this.outage.failed(cause);
    return operation();
  }
}
