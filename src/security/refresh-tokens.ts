import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3600_000;
/** Two tabs refreshing with the same token at once both succeed within this window. */
export const REFRESH_REUSE_GRACE_MS = 10_000;

/**
 * Refresh tokens are never stored. A token is `<session id>.<generation>.<mac>`, where the mac is
 * HMAC-SHA-256 (256 bits, key outside the database) over the session id, the generation and the
 * session's 256-bit random seed. The session row keeps only the seed and the current generation, so
 * the service can (a) tell the current token from an already-rotated one of the same session, which
 * is how reuse is detected, and (b) give a concurrent tab the current token again during the grace.
 */
export interface RefreshTokens {
  newSeed(): string;
  issue(sessionId: string, seed: string, generation: number): string;
  parse(token: string): { sessionId: string; generation: number } | undefined;
  /** Constant-time check that `token` was issued for this session, seed and its own generation. */
  isAuthentic(token: string, seed: string): boolean;
}

// One spelling per token: a generation without leading zeros, as issue() writes it.
const TOKEN_PATTERN = /^([0-9a-f-]{36})\.(0|[1-9]\d{0,8})\.([A-Za-z0-9_-]{43})$/;

export function createRefreshTokens(key: Buffer): RefreshTokens {
  const mac = (sessionId: string, seed: string, generation: number) =>
    createHmac('sha256', key).update(`${sessionId}\n${generation}\n${seed}`).digest('base64url');
  const parse = (token: string) => {
    const match = TOKEN_PATTERN.exec(token);
    if (match === null) return undefined;
    return { sessionId: match[1] as string, generation: Number(match[2]), mac: match[3] as string };
  };
  return {
    newSeed: () => randomBytes(32).toString('hex'),
    issue: (sessionId, seed, generation) =>
      `${sessionId}.${generation}.${mac(sessionId, seed, generation)}`,
    parse(token) {
      const parsed = parse(token);
      return parsed && { sessionId: parsed.sessionId, generation: parsed.generation };
    },
    isAuthentic(token, seed) {
      const parsed = parse(token);
      if (parsed === undefined) return false;
      const expected = Buffer.from(mac(parsed.sessionId, seed, parsed.generation));
      const actual = Buffer.from(parsed.mac);
      return expected.length === actual.length && timingSafeEqual(expected, actual);
    },
  };
}
