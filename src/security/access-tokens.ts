import { errors, jwtVerify, SignJWT, type JWK, type JWTVerifyGetKey } from 'jose';
import type { Db } from '../db/database.js';
import type { SecretBox } from './secret-box.js';
import { activeSigningKey, loadSigningKeys } from './signing-keys.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

export const ACCESS_TOKEN_TTL_SECONDS = 900 as const; // 15 minutes
const TOKEN_TYPE = 'at+jwt';
/** Keys are re-read this often, to see keys added or retired by a rotation (or another instance). */
const KEY_RELOAD_INTERVAL_MS = 60_000;
/** An unknown `kid` may force an early re-read, at most this often. */
const UNKNOWN_KID_RELOAD_MS = 5_000;

/** Whom a token is for: what `sign` puts in it. */
interface TokenSubject {
  readonly userId: string;
  readonly sessionId: string;
}

export interface AccessClaims extends TokenSubject {
  /** `exp` in ms since the epoch: the chat socket closes at this moment unless renewed. */
  readonly expiresAt: number;
}

export interface AccessTokens {
  sign(subject: TokenSubject): Promise<string>;
  /**
   * The claims of a valid token, or undefined for any invalid, expired or foreign one. Throws
   * (rather than answering undefined) when the signing keys cannot be read: not the token's fault.
   */
  verify(token: string): Promise<AccessClaims | undefined>;
  publicJwks(): Promise<{ keys: JWK[] }>;
}

interface Options {
  readonly db: Db;
  readonly box: SecretBox;
  /** PUBLIC_URL: both `iss` and `aud`. */
  readonly issuer: string;
  readonly clock: () => number;
}

export async function createAccessTokens({
  db,
  box,
  issuer,
  clock,
}: Options): Promise<AccessTokens> {
  let keys = await loadSigningKeys(db, box, clock());
  let lastReload = clock();
  /** The re-read under way: requests that need it wait for it, not answer with the old keys. */
  let reloading: Promise<void> | undefined;
  const reload = () =>
    (reloading ??= loadSigningKeys(db, box, clock())
      .then((loaded) => {
        keys = loaded;
      })
      .finally(() => {
        reloading = undefined;
      }));
  /**
   * Re-reads the keys once they are older than `ms`. A periodic re-read that fails keeps the keys
   * held (they sign and verify as they did a minute ago): a refresh has already rotated its
   * session when it signs, and failing it then would cost the client its new refresh token, and
   * after the grace window the session. Only a re-read for a key not held (`needed`) must succeed.
   * A burst of tokens of a key not yet held (another instance signs with it first) all wait for
   * the one re-read their first started: they were answered 401 while it ran.
   */
  const reloadIfOlderThan = async (ms: number, needed = false) => {
    const previous = lastReload;
    const started = reloading === undefined && clock() - previous > ms;
    // Keys held serve while another request re-reads them; only a key not held is worth a wait.
    if (!started && !(needed && reloading !== undefined)) return;
    if (started) lastReload = clock();
    try {
      await reload();
    } catch (error) {
      if (!needed) return;
      if (started) lastReload = previous; // the next token of an unknown key tries again
      throw error;
    }
  };

  const verifiedTokens = new VerifiedTokenCache();
  const findKey = (kid: string | undefined) => keys.find((k) => k.kid === kid);
  const getKey: JWTVerifyGetKey = async (header) => {
    const held = findKey(header.kid) !== undefined;
    await reloadIfOlderThan(held ? KEY_RELOAD_INTERVAL_MS : UNKNOWN_KID_RELOAD_MS, !held);
    const key = findKey(header.kid);
    // Each key verifies only the algorithm it was made for: `alg` is pinned per key.
    if (key === undefined || key.algorithm !== header.alg) throw new errors.JWKSNoMatchingKey();
    return key.publicKey;
  };

  return {
    async sign({ userId, sessionId }) {
      await reloadIfOlderThan(KEY_RELOAD_INTERVAL_MS);
      const key = activeSigningKey(keys, clock());
      const issuedAt = Math.floor(clock() / 1000);
      return new SignJWT({ sid: sessionId })
        .setProtectedHeader({ alg: key.algorithm, typ: TOKEN_TYPE, kid: key.kid })
        .setSubject(userId)
        .setIssuer(issuer)
        .setAudience(issuer)
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + ACCESS_TOKEN_TTL_SECONDS)
        .sign(key.privateKey);
    },
    async verify(token) {
      const cached = verifiedTokens.get(token, clock());
      if (cached !== undefined) {
        await reloadIfOlderThan(KEY_RELOAD_INTERVAL_MS);
        if (findKey(cached.kid) !== undefined) return cached.claims;
        verifiedTokens.delete(token); // its key was retired: verify afresh (and fail)
      }
      try {
        const { payload, protectedHeader } = await jwtVerify(token, getKey, {
          algorithms: [...new Set(keys.map((k) => k.algorithm))],
          typ: TOKEN_TYPE,
          issuer,
          audience: issuer,
          currentDate: new Date(clock()),
          requiredClaims: ['sub', 'sid', 'iat', 'exp'],
        });
        if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string') return undefined;
        const expiresAt = (payload.exp as number) * 1000;
        const claims = { userId: payload.sub, sessionId: payload.sid, expiresAt };
        verifiedTokens.set(token, { claims, kid: protectedHeader.kid, expiresAt });
        return claims;
      } catch (error) {
        if (error instanceof errors.JOSEError) return undefined;
        throw error;
      }
    },
    async publicJwks() {
      await reloadIfOlderThan(KEY_RELOAD_INTERVAL_MS);
      return { keys: keys.map((k) => k.publicJwk) };
    },
  };
}
