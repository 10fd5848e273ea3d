import { AWAITING_AUTH_PER_NETWORK } from './socket-limits.js';

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
