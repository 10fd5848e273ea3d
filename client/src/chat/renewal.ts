import { RENEW_MARGIN_MS } from '../session.js';
import { retryAfterMs } from './backoff.js';
import type { Tokens } from '../token-store.js';

/** A renewal whose refresh failed (network, 503) is tried again after this long, or its `Retry-After`. */
const RETRY_MS = 5_000;
/** setTimeout's longest delay; a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface RenewalHooks {
  /** Tokens with at least 30 s left: the client's single-flight refresh when they had less. */
  readonly tokens: () => Promise<Tokens | null>;
  /** The client's clock, which `expiresAt` is on. */
  readonly now: () => number;
  /** The tokens now (new ones, or another tab's, or the same when it fired a moment early). */
  readonly renewed: (tokens: Tokens) => void;
  readonly signedOut: () => void;
  readonly failed: (error: unknown) => void;
}

/**
 * Keeps one socket's authentication ahead of its access token: 30 s before `expiresAt` (the REST
 * calls' margin) it asks for fresh tokens, hands them over, and waits for their turn. Tokens
 * without `expiresAt` are not renewed here: the service closes with 4401 at their expiry.
 */
export class Renewal {
  private readonly hooks: RenewalHooks;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(hooks: RenewalHooks, tokens: Tokens) {
    this.hooks = hooks;
    this.schedule(tokens.expiresAt);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(expiresAt: number | undefined): void {
    if (expiresAt === undefined) return;
    const inMs = Math.min(expiresAt - RENEW_MARGIN_MS - this.hooks.now(), MAX_TIMER_MS);
    this.after(inMs);
  }

  private after(inMs: number): void {
    this.timer = setTimeout(() => void this.renew(), Math.max(0, inMs));
  }

  private async renew(): Promise<void> {
    let tokens: Tokens | null;
    try {
      tokens = await this.hooks.tokens();
    } catch (error) {
      if (this.stopped) return;
      this.hooks.failed(error);
      if (this.stopped) return; // `failed` closed the connection
      return this.after(Math.max(RETRY_MS, retryAfterMs(error)));
    }
    if (this.stopped) return;
    if (tokens === null) return this.hooks.signedOut();
    this.hooks.renewed(tokens);
    this.schedule(tokens.expiresAt);
  }
}
