import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { findLiveSessionAccount, touchSession } from './sessions.store.js';
import type { Caller } from './sessions.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authenticate hooks when a valid bearer token came with the request. */
    caller?: Caller;
  }
}

/** `last_used_at` is refreshed at most this often, so reads do not turn into writes. */
const TOUCH_INTERVAL_MS = 60_000;
const BEARER = /^Bearer +([A-Za-z0-9\-_.]+) *$/i;

/**
 * Bearer authentication: the JWT's signature, algorithm, `typ`, `iss`, `aud` and expiry, then that
 * its session (`sid`) is still live, so logout and password changes take effect at once.
 */
export function createAuthenticator(ctx: ServiceContext) {
  async function verifyBearer(request: FastifyRequest): Promise<Caller> {
    const match = BEARER.exec(request.headers.authorization ?? '');
    const claims = match && (await ctx.accessTokens.verify(match[1] as string));
    if (!claims) throw Errors.unauthorized();
    const now = ctx.clock();
    const live = await findLiveSessionAccount(ctx.db, claims.sessionId, now);
    if (live === undefined || live.account.id !== claims.userId) throw Errors.unauthorized();
    if (now - live.sessionLastUsedAt > TOUCH_INTERVAL_MS)
      await touchSession(ctx.db, claims.sessionId, now);
    return { ...claims, account: live.account };
  }

  return {
    /** For endpoints that need a signed-in user. */
    requireBearer: async function requireBearer(request: FastifyRequest): Promise<void> {
      request.caller = await verifyBearer(request);
    },
    /** For endpoints where the token is optional: absent is fine, present must be valid. */
    acceptBearer: async function acceptBearer(request: FastifyRequest): Promise<void> {
      if (request.headers.authorization === undefined) return;
      request.caller = await verifyBearer(request);
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;

/** The caller of a route guarded by `requireBearer`. */
export function callerOf(request: FastifyRequest): Caller {
  if (request.caller === undefined) throw Errors.unauthorized();
  return request.caller;
}
