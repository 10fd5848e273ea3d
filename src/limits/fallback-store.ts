import type { FastifyBaseLogger } from 'fastify';
import { CircuitBreaker, PROBE_TIMING, type ProbeTiming } from './circuit-breaker.js';
import { OutageLog } from '../outage-log.js';
import type {
  Counter,
  Decision,
  JointDecision,
  Rule,
  SlidingWindowStore,
} from './sliding-window.js';

export interface FallbackOptions {
  readonly log: FastifyBaseLogger;
  readonly clock: () => number;
  /** Resolves when the primary answers again (for Redis: a PING). */
  readonly probe: () => Promise<unknown>;
  readonly probeTiming?: ProbeTiming;
}

/**
 * Keys cleared, and events released, while Redis was away: kept to do the same there once it
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
  /**
   * A clear is a promise (a password reset lifts the lockout), and Redis may still hold the
   * events when it answers again (it hung, or the network between us did): cleared there then.
   */
  private readonly clearedMeanwhile = new Set<string>();
  /**
   * Likewise a release (a right password takes its attempt back; a replay its send): an event
   * Redis recorded before it went away must not stay counted there. Keyed by event.
   */
  private readonly releasedMeanwhile = new Map<string, readonly string[]>();

  constructor(
    private readonly primary: SlidingWindowStore,
    private readonly fallback: SlidingWindowStore,
    options: FallbackOptions,
  ) {
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
        this.clearInPrimary();
        this.releaseInPrimary();
      },
      options.probeTiming ?? PROBE_TIMING,
    );
  }

  consume(key: string, rules: readonly Rule[], now: number): Promise<Decision> {
    return this.attempt((store) => store.consume(key, rules, now));
  }

  consumeAll(counters: readonly Counter[], now: number): Promise<JointDecision> {
    return this.attempt((store) => store.consumeAll(counters, now));
  }

  record(key: string, retainMs: number, now: number): Promise<void> {
    return this.attempt((store) => store.record(key, retainMs, now));
  }

  release(key: string, event: string): Promise<void> {
    return this.releaseAll([key], event);
  }

  /**
   * The event lives in whichever store recorded it (in the other one this is a no-op); one that
   * Redis did not take is queued for when it answers (see releasedMeanwhile).
   */
  async releaseAll(keys: readonly string[], event: string): Promise<void> {
    if (this.breaker.isOpen) {
      this.releaseLater(keys, event);
      return this.fromMemory((store) => store.releaseAll(keys, event));
    }
    await Promise.all([
      this.primary.releaseAll(keys, event).catch((error: unknown) => {
        if (this.breaker.trip()) this.outage.failed(error);
        this.releaseLater(keys, event);
      }),
      this.fallback.releaseAll(keys, event),
    ]);
  }

  private releaseLater(keys: readonly string[], event: string): void {
    this.releasedMeanwhile.set(event, keys);
    if (this.releasedMeanwhile.size > MEANWHILE_MAX) {
      const oldest = this.releasedMeanwhile.keys().next().value;
      if (oldest !== undefined) this.releasedMeanwhile.delete(oldest);
    }
  }

  /** Redis answers again: the releases it missed meanwhile (a failure: later). */
  private releaseInPrimary(): void {
    for (const [event, keys] of this.releasedMeanwhile) {
      this.releasedMeanwhile.delete(event);
      this.primary.releaseAll(keys, event).catch(() => {
        if (this.breaker.trip()) this.outage.failed(undefined);
        this.releaseLater(keys, event);
      });
    }
  }

  /** Queued for Redis when it did not take it (see clearedMeanwhile), decided by the path taken. */
  async clear(key: string): Promise<void> {
    if (this.breaker.isOpen) {
      this.clearLater(key);
      return this.fromMemory((store) => store.clear(key));
    }
    await Promise.all([
      this.primary.clear(key).catch((error: unknown) => {
        if (this.breaker.trip()) this.outage.failed(error);
        this.clearLater(key);
      }),
      this.fallback.clear(key),
    ]);
  }

  private clearLater(key: string): void {
    this.clearedMeanwhile.delete(key); // re-added as the newest
    this.clearedMeanwhile.add(key);
    if (this.clearedMeanwhile.size > MEANWHILE_MAX) {
      const oldest = this.clearedMeanwhile.values().next().value;
      if (oldest !== undefined) this.clearedMeanwhile.delete(oldest);
    }
  }

  /**
   * Redis answers again: what was cleared meanwhile is cleared there too (a failure: later). It
   * also clears what other instances counted there since, which errs the way the clear did.
   */
  private clearInPrimary(): void {
    for (const key of this.clearedMeanwhile) {
      this.clearedMeanwhile.delete(key);
      this.primary.clear(key).catch(() => {
        if (this.breaker.trip()) this.outage.failed(undefined);
        this.clearLater(key);
      });
    }
  }

  async close(): Promise<void> {
    this.breaker.stop();
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }

  private async attempt<T>(operation: (store: SlidingWindowStore) => Promise<T>): Promise<T> {
    if (this.breaker.isOpen) return this.fromMemory(operation);
    try {
      return await operation(this.primary);
    } catch (error) {
      this.breaker.trip();
      return this.fromMemory(operation, error);
    }
  }

  /** `cause`: the error that just opened the breaker, if this call met it. */
  private fromMemory<T>(
    operation: (store: SlidingWindowStore) => Promise<T>,
    cause?: unknown,
  ): Promise<T> {
    this.outage.failed(cause);
    return operation(this.fallback);
  }
}
