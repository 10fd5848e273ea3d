import { LeastRecentlyUsed } from '../least-recently-used.js';
import type { AccessClaims } from './access-tokens.js';

/**
 * Tokens whose signature and claims were already verified, until they expire. Apps send the same
 * access token for its whole 15 minutes, and an ECDSA verification costs as much as a whole
 * cheap request. Only the signature work is skipped: the session is still checked on every request.
 */
export interface VerifiedToken {
  readonly claims: AccessClaims;
  /** The signing key's id: the entry is void once that key is no longer published. */
  readonly kid: string | undefined;
  readonly expiresAt: number;
}

/**
 * Least recently used tokens are dropped first. The capacity holds a token for each socket of an
 * instance at issue 11's 10,000 sockets, with room for HTTP-only clients: when every socket is
 * dropped at once, each reconnect presents a token verified before the drop, and a cache smaller
 * than the sockets would have dropped every one of them (each costing an ECDSA verification in the
 * storm). About 0.6 KiB per entry: 9 MiB when full.
 */
export class VerifiedTokenCache {
  static readonly MAX_ENTRIES = 15_000;
  private readonly entries: LeastRecentlyUsed<string, VerifiedToken>;

  constructor(capacity = VerifiedTokenCache.MAX_ENTRIES) {
    this.entries = new LeastRecentlyUsed(capacity);
  }

  get size(): number {
    return this.entries.size;
  }

  get(token: string, now: number): VerifiedToken | undefined {
    const entry = this.entries.get(token);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now) return entry;
    this.entries.delete(token);
    return undefined;
  }

  delete(token: string): void {
    this.entries.delete(token);
  }

  set(token: string, entry: VerifiedToken): void {
    this.entries.set(token, entry);
  }
}
