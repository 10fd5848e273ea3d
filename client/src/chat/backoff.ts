/** How long to wait before reconnecting: exponential, capped, with full jitter. */
export interface BackoffPolicy {
  /** The ceiling of the first delay; it doubles with each failed attempt. Default 1 s. */
  readonly baseMs?: number;
  /** The highest ceiling. Default 30 s. */
  readonly capMs?: number;
  /** A connection that stayed up this long resets the attempts to 0. Default 10 s. */
  readonly stableAfterMs?: number;
}

export const DEFAULT_BACKOFF: Required<BackoffPolicy> = {
  baseMs: 1_000,
  capMs: 30_000,
  stableAfterMs: 10_000,
};

/** The attempt whose window a `spread` reconnect starts from: base × 4 (4 s by default). */
const SPREAD_FROM_ATTEMPT = 2;

/** Past this many doublings every ceiling is the cap anyway (and 2 ** attempt stays finite). */
const MAX_DOUBLINGS = 30;

/**
 * The delay before reconnect attempt `attempt` (0 first): uniformly random between 0 and
 * min(cap, base × 2^attempt), "full jitter". When a server restarts, its clients spread their
 * reconnects over the whole window instead of arriving together at each doubling.
 */
export function backoffDelay(
  attempt: number,
  policy: Required<BackoffPolicy>,
  random: () => number,
): number {
  const doublings = Math.min(Math.max(0, attempt), MAX_DOUBLINGS);
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** doublings);
  return Math.floor(random() * ceiling);
}

/**
 * A delay around the cap, between half of it and all of it: for a refusal that retrying soon
 * cannot fix (a sixth socket of the user), still jittered so that refused clients do not return
 * together.
 */
function cappedDelay(policy: Required<BackoffPolicy>, random: () => number): number {
  return Math.floor(policy.capMs * (0.5 + random() / 2));
}

/** The longest `Retry-After` followed: a proxy's advice of hours would leave the chat silent. */
const MAX_RETRY_AFTER_S = 300;

/**
 * How long a 429 or 503 asked to wait (`Retry-After`, on the client's errors), up to 5 minutes;
 * 0 when the error said nothing.
 */
export function retryAfterMs(error: unknown): number {
  const seconds = (error as { retryAfter?: unknown } | null)?.retryAfter;
  return typeof seconds === 'number' ? Math.min(seconds, MAX_RETRY_AFTER_S) * 1000 : 0;
}

/** The attempts of one connection: counts failures, forgets them after a stable connection. */
export class Backoff {
  attempt = 0;
  /**
   * The lowest attempt a window is drawn for: SPREAD_FROM_ATTEMPT after a `spread` until a stable
   * connection, so that the attempts after it (a restart's 1006s) stay spread as widely.
   */
  private floor = 0;
  private readonly policy: Required<BackoffPolicy>;
  private readonly random: () => number;

  constructor(policy: Required<BackoffPolicy>, random: () => number) {
    this.policy = policy;
    this.random = random;
  }

  /**
   * The delay before the next attempt; counts it. `wait`: a refusal retrying soon cannot fix
   * (about the cap); `spread`: the server went away from every client at once (a shutdown, an
   * outage), whose first attempts spread over SPREAD_FROM_ATTEMPT's window (4 s by default) rather
   * than 1 s, so that a restart's tens of thousands of sockets do not return in the same second.
   */
  next(kind: 'reconnect' | 'spread' | 'wait' = 'reconnect'): number {
    if (kind === 'spread') this.floor = SPREAD_FROM_ATTEMPT;
    const delay =
      kind === 'wait'
        ? cappedDelay(this.policy, this.random)
        : backoffDelay(Math.max(this.attempt, this.floor), this.policy, this.random);
    this.attempt += 1;
    return delay;
  }

  /**
   * A connection closed `upForMs` after it was caught up (undefined: it never was): long enough,
   * and the count starts again. Counted from the catch-up, not from `ready`: a connection whose
   * catch-up hangs is no stable one.
   */
  closedAfter(upForMs: number | undefined): void {
    if (upForMs === undefined || upForMs < this.policy.stableAfterMs) return;
    this.attempt = 0;
    this.floor = 0;
  }
}
