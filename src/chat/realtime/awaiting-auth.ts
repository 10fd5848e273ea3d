/**
 * Sockets from one address that are still waiting for their `auth` frame, at most this many at
 * once. API.md gives an unauthenticated socket 5 s, and nothing else bounded how many one client
 * could hold open in that time: thousands of idle sockets (a few KiB each) from one address. A
 * browser sends `auth` right after `open`, so even a busy office behind one address rarely has
 * more than a few waiting at once (a reconnect storm after a deploy included). Over the cap the
 * socket closes with 4429 at once; the client retries with its usual back-off.
 */
export const AWAITING_AUTH_PER_ADDRESS = 50;

/** How many sockets each client address holds open without authentication, on this instance. */
export class AwaitingAuthentication {
  private readonly byAddress = new Map<string, number>();

  /** Counts one more socket from `address`, or answers false when it already has its share. */
  admit(address: string): boolean {
    const count = this.byAddress.get(address) ?? 0;
    if (count >= AWAITING_AUTH_PER_ADDRESS) return false;
    this.byAddress.set(address, count + 1);
    return true;
  }

  /** One socket from `address` authenticated or closed. */
  release(address: string): void {
    const count = (this.byAddress.get(address) ?? 0) - 1;
    if (count > 0) this.byAddress.set(address, count);
    else this.byAddress.delete(address);
  }
}
