export interface LivenessOptions {
  /** After this long without a frame from the service, send `ping`. Default 30 s. */
  readonly pingIntervalMs?: number;
  /** A `ping` unanswered this long (no frame at all) means the connection is dead. Default 10 s. */
  readonly pongTimeoutMs?: number;
}

export const DEFAULT_LIVENESS: Required<LivenessOptions> = {
  pingIntervalMs: 30_000,
  pongTimeoutMs: 10_000,
};

/**
 * Notices a connection that died without a close (a laptop that slept, a network that changed):
 * the service's own pings are protocol frames, answered by the WebSocket implementation and never
 * shown to a browser's script, so the client asks for a `pong` itself when the socket is silent.
 * One timer, re-armed only when it fires, so a busy socket costs no timer work per frame.
 */
export class Liveness {
  private lastHeard = Date.now();
  private pingedAt: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  private readonly options: Required<LivenessOptions>;
  private readonly ping: () => void;
  private readonly dead: () => void;

  constructor(options: Required<LivenessOptions>, ping: () => void, dead: () => void) {
    this.options = options;
    this.ping = ping;
    this.dead = dead;
    this.arm(options.pingIntervalMs);
  }

  /** A frame came. */
  heard(): void {
    this.lastHeard = Date.now();
    this.pingedAt = undefined;
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private arm(inMs: number): void {
    this.timer = setTimeout(() => this.check(), Math.max(0, inMs));
  }

  private check(): void {
    const now = Date.now();
    if (this.pingedAt !== undefined) {
      const waited = now - this.pingedAt;
      if (waited >= this.options.pongTimeoutMs) return this.dead();
      return this.arm(this.options.pongTimeoutMs - waited);
    }
    const silentFor = now - this.lastHeard;
    if (silentFor < this.options.pingIntervalMs) {
      return this.arm(this.options.pingIntervalMs - silentFor);
    }
    this.pingedAt = now;
    this.ping();
    this.arm(this.options.pongTimeoutMs);
  }
}
