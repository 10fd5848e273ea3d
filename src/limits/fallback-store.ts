import type { FastifyBaseLogger } from 'fastify';
import { CircuitBreaker, PROBE_TIMING, type ProbeTiming } from './circuit-breaker.js';
import { OutageLog } from '../outage-log.js';
import type { AllDecision, Counted, Decision, Rule, SlidingWindowStore } from './sliding-window.js';

export interface FallbackOptions {
  readonly log: FastifyBaseLogger;
  readonly clock: () => number;
  /** Resolves when the primary answers again (for Redis: a PING). */
  readonly probe: () => Promise<unknown>;
  readonly probeTiming?: ProbeTiming;
}

/**
 * Redis first; after it fails, this instance's memory until a background probe finds Redis
 * answering again (see CircuitBreaker), so a hung Redis costs one command timeout, not one per
 * call. Limits then hold per instance instead of across all of them, which beats refusing every
 * login because a cache is down.
 */
export class FallbackWindowStore implements SlidingWindowStore {
  private readonly breaker: CircuitBreaker;
  private readonly outage: OutageLog;

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
      () => this.outage.answered(),
      options.probeTiming ?? PROBE_TIMING,
    );
  }

  consume(key: string, rules: readonly Rule[], now: number): Promise<Decision> {
    return this.attempt((store) => store.consume(key, rules, now));
  }

  consumeAll(counted: readonly Counted[], now: number): Promise<AllDecision> {
    return this.attempt((store) => store.consumeAll(counted, now));
  }

  record(key: string, retainMs: number, now: number): Promise<void> {
    return this.attempt((store) => store.record(key, retainMs, now));
  }

  release(key: string, event: string): Promise<void> {
    return this.everywhere((store) => store.release(key, event));
  }

  clear(key: string): Promise<void> {
    return this.everywhere((store) => store.clear(key));
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

  /** The event lives in whichever store recorded it; in the other one this is a no-op. */
  private async everywhere(operation: (store: SlidingWindowStore) => Promise<void>) {
    if (this.breaker.isOpen) return this.fromMemory(operation);
    await Promise.all([
      operation(this.primary).catch((error: unknown) => {
        if (this.breaker.trip()) this.outage.failed(error);
      }),
      operation(this.fallback),
    ]);
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
