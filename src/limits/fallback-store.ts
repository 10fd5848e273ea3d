import type { FastifyBaseLogger } from 'fastify';
import type { Decision, Rule, SlidingWindowStore } from './sliding-window.js';

/**
 * Redis first; while it fails, this instance's memory. Limits then hold per instance instead of
 * across all of them, which beats refusing every login because a cache is down.
 */
export class FallbackWindowStore implements SlidingWindowStore {
  private degraded = false;

  constructor(
    private readonly primary: SlidingWindowStore,
    private readonly fallback: SlidingWindowStore,
    private readonly log: FastifyBaseLogger,
  ) {}

  consume(key: string, rules: readonly Rule[], now: number): Promise<Decision> {
    return this.attempt((store) => store.consume(key, rules, now));
  }

  record(key: string, retainMs: number, now: number): Promise<void> {
    return this.attempt((store) => store.record(key, retainMs, now));
  }

  async release(key: string, event: string): Promise<void> {
    // The event lives in whichever store recorded it; releasing in the other one is a no-op.
    await Promise.allSettled([this.primary.release(key, event), this.fallback.release(key, event)]);
  }

  async clear(key: string): Promise<void> {
    await Promise.allSettled([this.primary.clear(key), this.fallback.clear(key)]);
  }

  async close(): Promise<void> {
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }

  get isDegraded(): boolean {
    return this.degraded;
  }

  private async attempt<T>(operation: (store: SlidingWindowStore) => Promise<T>): Promise<T> {
    try {
      const result = await operation(this.primary);
      if (this.degraded) {
        this.degraded = false;
        this.log.warn('Redis is back: rate limits are shared across instances again');
      }
      return result;
    } catch (error) {
      if (!this.degraded) {
        this.degraded = true;
        this.log.warn(
          { err: error },
          "Redis is unavailable: rate limits fall back to this instance's memory",
        );
      }
      return operation(this.fallback);
    }
  }
}
