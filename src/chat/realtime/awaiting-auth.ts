/**
 * Sockets from one client network (an IPv4 address, an IPv6 /64: `clientNetwork`, as every
 * per-IP limit counts) that are still waiting for their `auth` frame, at most this many at once.
 * API.md gives an unauthenticated socket 5 s, and nothing else bounded how many one client could
 * hold open in that time: thousands of idle sockets, a few KiB each. A browser sends `auth` right
 * after `open`, so even a busy office behind one address rarely has more than a few waiting at
 * once (a reconnect storm after a deploy included). Over the cap the socket closes with 4429 at
 * once; the client retries with its usual back-off.
 */
export const AWAITING_AUTH_PER_NETWORK = 50;

/** How many sockets each client network holds open without authentication, on this instance. */
export class AwaitingAuthentication {
  private readonly byNetwork = new Map<string, number>();

  /** Counts one more socket from `network`, or answers false when it already has its share. */
  admit(network: string): boolean {
    const count = this.byNetwork.get(network) ?? 0;
    if (count >= AWAITING_AUTH_PER_NETWORK) return false;
    this.byNetwork.set(network, count + 1);
    return true;
  }

  /** One socket from `network` authenticated or closed. */
  release(network: string): void {
    const count = (this.byNetwork.get(network) ?? 0) - 1;
    if (count > 0) this.byNetwork.set(network, count);
    else this.byNetwork.delete(network);
  }
}
