import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { findLiveSessionAccount, touchSession } from './caller.store.js';
import type { ProfileRow } from './users.store.js';

/** Whom an authenticated request (or socket) acts for. */
export interface Caller {
  readonly userId: string;
  readonly sessionId: string;
  /**
   * When this authentication ends (ms since the epoch): the access token's expiry, or its
   * session's end if that comes first (a token refreshed in a session's last minutes outlives it).
   */
  readonly expiresAt: number;
  /** The account's profile as read when the token was verified. */
  readonly account: ProfileRow;
}

/** `last_used_at` is refreshed at most this often, so reads do not turn into writes. */
const TOUCH_INTERVAL_MS = 60_000;

/**
 * An access token to its caller: the JWT's signature, algorithm, `typ`, `iss`, `aud` and expiry,
 * then that its session (`sid`) is still live, so logout and password changes take effect at
 * once. REST requests and the chat socket's `auth` frame both come through here.
 *
 * Throws `unauthorized` for a bad token only; a database that cannot answer propagates its own
 * error (rendered as `503 unavailable`), so an outage never signs anyone out.
 */
export async function verifyAccessToken(ctx: ServiceContext, token: string): Promise<Caller> {
  const claims = await ctx.accessTokens.verify(token);
  if (claims === undefined) throw Errors.unauthorized();
  const now = ctx.clock();
  const live = await findLiveSessionAccount(ctx.db, claims.sessionId, now);
  if (live === undefined || live.account.id !== claims.userId) throw Errors.unauthorized();
  if (now - live.sessionLastUsedAt > TOUCH_INTERVAL_MS)
    await touchSession(ctx.db, claims.sessionId, now);
  const expiresAt = Math.min(claims.expiresAt, live.sessionExpiresAt);
  return { ...claims, expiresAt, account: live.account };
}
