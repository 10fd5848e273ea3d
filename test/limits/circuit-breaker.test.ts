import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CircuitBreaker, PROBE_TIMING } from '../../src/limits/circuit-breaker.js';

// The breaker alone, on fake timers: no database or Redis involved (redis-hang.test.ts drives it
// through the service with a frozen Redis).

describe('the circuit breaker probes on a growing interval while open', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A breaker whose probe fails `failures` times, then answers; records when it probed. */
  function breakerFailing(failures: number) {
    const probes: number[] = [];
    const closed: number[] = [];
    const start = Date.now();
    const breaker = new CircuitBreaker(
      async () => {
        probes.push(Date.now() - start);
        if (probes.length <= failures) throw new Error('no answer');
      },
      () => closed.push(Date.now() - start),
    );
    return { breaker, probes, closed };
  }

  it('opens on the first failure only, doubles the wait after each failed probe up to 5 s, and closes when a probe answers', async () => {
    const { breaker, probes, closed } = breakerFailing(7);
    expect(breaker.trip()).toBe(true);
    expect(breaker.trip()).toBe(false); // already open: the caller logs nothing more
    expect(breaker.isOpen).toBe(true);

    await vi.advanceTimersByTimeAsync(60_000);
    const waits = probes.map((at, i) => at - (probes[i - 1] ?? 0));
    expect(PROBE_TIMING).toEqual({ firstMs: 250, maxMs: 5_000 });
    expect(waits).toEqual([250, 500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000]);
    expect(closed).toEqual([probes.at(-1)]);
    expect(breaker.isOpen).toBe(false);

    // A new outage starts again from the shortest wait.
    expect(breaker.trip()).toBe(true);
    await vi.advanceTimersByTimeAsync(250);
    expect(breaker.isOpen).toBe(false);
    breaker.stop();
  });

  it('stops probing once stopped', async () => {
    const { breaker, probes } = breakerFailing(Infinity);
    breaker.trip();
    await vi.advanceTimersByTimeAsync(1_000);
    const before = probes.length;
    breaker.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(probes).toHaveLength(before);
    expect(breaker.trip()).toBe(false);
  });
});
