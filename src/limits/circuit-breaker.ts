export interface ProbeTiming {
  /** The first probe runs this long after the breaker opens; each failed one doubles the wait. */
  readonly firstMs: number;
  readonly maxMs: number;
}

/** Redis is probed 0.25 s after a failure, then at 0.5, 1, 2, 4 s and every 5 s: back within 5 s. */
export const PROBE_TIMING: ProbeTiming = { firstMs: 250, maxMs: 5_000 };

/**
 * A circuit breaker for a dependency with a fallback. Closed, callers use the dependency; the
 * first failure opens it, and callers then go straight to the fallback instead of each waiting for
 * the dependency's timeout (a hung server would make every call wait). While open, `probe` runs in
 * the background on a growing interval; the first probe that resolves closes the breaker again.
 */
export class CircuitBreaker {
  private open = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly probe: () => Promise<unknown>,
    private readonly onClose: () => void,
    private readonly timing: ProbeTiming = PROBE_TIMING,
  ) {}

  get isOpen(): boolean {
    return this.open;
  }

  /** Opens the breaker after a failure; true if this call opened it (false if already open). */
  trip(): boolean {
    if (this.open || this.stopped) return false;
    this.open = true;
    this.scheduleProbe(this.timing.firstMs);
    return true;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private scheduleProbe(delayMs: number): void {
    this.timer = setTimeout(() => void this.runProbe(delayMs), delayMs);
    this.timer.unref();
  }

  private async runProbe(delayMs: number): Promise<void> {
    try {
      await this.probe();
    } catch {
      if (!this.stopped) this.scheduleProbe(Math.min(delayMs * 2, this.timing.maxMs));
      return;
    }
    if (this.stopped) return;
    this.open = false;
    this.onClose();
  }
}
