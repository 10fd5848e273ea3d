import { randomUUID } from 'node:crypto';
import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { canonicalRowId } from '../db/ids.js';
import { isoTimestamp } from '../http/timestamps.js';
import { ACCESS_TOKEN_TTL_SECONDS } from '../security/access-tokens.js';
import { REFRESH_REUSE_GRACE_MS, REFRESH_TOKEN_TTL_MS } from '../security/refresh-tokens.js';
import {
  advanceGeneration,
  deleteSession,
  deleteSessionsOfUser,
  endSessionsBeyond,
  findLiveSession,
  insertSessionWhileHashIs,
  listLiveSessions,
  type SessionRow,
} from './sessions.store.js';
import type { Caller } from '../accounts/caller.js';
import { publishSessionsEnded } from '../events/account-events.js';

export interface TokenResponse {
  access_token: string;
  refresh_token: string;
  token_type: 'Bearer';
  expires_in: typeof ACCESS_TOKEN_TTL_SECONDS;
}

export interface ClientInfo {
  readonly userAgent: string | undefined;
  readonly ip: string;
}

const USER_AGENT_MAX_LENGTH = 512;

/**
 * Sessions an account keeps: signing in beyond them ends the least recently used. Every login
 * adds one for 30 days, and `GET /api/sessions` lists them all: 50,000 made a 34 MB answer that
 * took the event loop most of a second, asked for as often as one liked.
 */
export const MAX_SESSIONS_PER_ACCOUNT = 100;

/**
 * Signs the account in on a new session, if its password hash is still `passwordHash` (the one the
 * caller checked, or just stored): otherwise the password changed, or the account went, meanwhile,
 * and this answers 401 invalid_credentials.
 */
export async function startSession(
  ctx: ServiceContext,
  { id: userId, password_hash: passwordHash }: { id: string; password_hash: string },
  client: ClientInfo,
): Promise<TokenResponse> {
  const now = ctx.clock();
  const session: SessionRow = {
    id: randomUUID(),
    user_id: userId,
    refresh_seed: ctx.refreshTokens.newSeed(),
    refresh_generation: 0,
    recent_rotations: null,
    user_agent: client.userAgent?.slice(0, USER_AGENT_MAX_LENGTH) ?? null,
    ip: client.ip,
    created_at: now,
    last_used_at: now,
    expires_at: now + REFRESH_TOKEN_TTL_MS,
  };
  const inserted = await insertSessionWhileHashIs(ctx.db, session, passwordHash);
  if (inserted === undefined) throw Errors.invalidCredentials();
  if (inserted.sessionsOfUser >= MAX_SESSIONS_PER_ACCOUNT) {
    const ended = await endSessionsBeyond(ctx.db, userId, MAX_SESSIONS_PER_ACCOUNT, now);
    publishSessionsEnded(ctx.events, userId, ended);
  }
  return tokensFor(ctx, session);
}

async function tokensFor(ctx: ServiceContext, session: SessionRow): Promise<TokenResponse> {
  return {
    access_token: await ctx.accessTokens.sign({ userId: session.user_id, sessionId: session.id }),
    refresh_token: ctx.refreshTokens.issue(
      session.id,
      session.refresh_seed,
      session.refresh_generation,
    ),
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
  };
}

/**
 * Rotates a refresh token. The current one moves the session to its next generation. An
 * already-rotated one revokes the session (it was stolen, or replayed), except the one rotated
 * in the last 10 s, which gets the session's current token (two tabs refreshing at once).
 */
export async function refreshSession(
  ctx: ServiceContext,
  refreshToken: string,
): Promise<TokenResponse> {
  const presented = ctx.refreshTokens.parse(refreshToken);
  if (presented === undefined) throw Errors.invalidRefreshToken();
  const now = ctx.clock();
  const session = await findLiveSession(ctx.db, presented.sessionId, now);
  if (session === undefined || !ctx.refreshTokens.isAuthentic(refreshToken, session.refresh_seed)) {
    throw Errors.invalidRefreshToken();
  }
  if (presented.generation === session.refresh_generation) {
    const rotations = JSON.stringify([
      ...recentRotations(session, now),
      [presented.generation, now],
    ]);
    if (await advanceGeneration(ctx.db, session, rotations, now)) {
      return tokensFor(ctx, { ...session, refresh_generation: session.refresh_generation + 1 });
    }
    // A concurrent refresh rotated it between our read and our write: treat as the grace case.
    return refreshSession(ctx, refreshToken);
  }
  const rotatedRecently = recentRotations(session, now).some(([g]) => g === presented.generation);
  if (presented.generation < session.refresh_generation && rotatedRecently) {
    return tokensFor(ctx, session);
  }
  if (await deleteSession(ctx.db, session.id, session.user_id))
    publishSessionsEnded(ctx.events, session.user_id, [session.id]);
  throw Errors.invalidRefreshToken();
}

/** The session's rotations within the grace window, as [generation, rotatedAt] pairs. */
function recentRotations(session: SessionRow, now: number): [number, number][] {
  const all = JSON.parse(session.recent_rotations ?? '[]') as [number, number][];
  return all.filter(([, rotatedAt]) => now - rotatedAt <= REFRESH_REUSE_GRACE_MS);
}

export async function logout(
  ctx: ServiceContext,
  caller: Caller,
  everywhere: boolean,
): Promise<void> {
  if (everywhere) {
    const ended = await deleteSessionsOfUser(ctx.db, caller.userId);
    publishSessionsEnded(ctx.events, caller.userId, ended);
    return;
  }
  await deleteSession(ctx.db, caller.sessionId, caller.userId);
  publishSessionsEnded(ctx.events, caller.userId, [caller.sessionId]);
}

export interface SessionView {
  id: string;
  created_at: string;
  last_used_at: string;
  user_agent: string | null;
  ip: string | null;
  current: boolean;
}

export async function listSessions(ctx: ServiceContext, caller: Caller): Promise<SessionView[]> {
  const sessions = await listLiveSessions(ctx.db, caller.userId, ctx.clock());
  return sessions.map((s) => ({
    id: s.id,
    created_at: isoTimestamp(s.created_at),
    last_used_at: isoTimestamp(s.last_used_at),
    user_agent: s.user_agent,
    ip: s.ip,
    current: s.id === caller.sessionId,
  }));
}

export async function revokeSession(
  ctx: ServiceContext,
  caller: Caller,
  ref: string,
): Promise<void> {
  const sessionId = canonicalRowId(ref);
  if (sessionId === undefined) throw Errors.notFound();
  // An expired session is listed no more, so it is not there to revoke (housekeeping deletes it).
  if (!(await deleteSession(ctx.db, sessionId, caller.userId, ctx.clock())))
    throw Errors.notFound();
  publishSessionsEnded(ctx.events, caller.userId, [sessionId]);
}
