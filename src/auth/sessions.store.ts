import type { Kysely, Selectable } from 'kysely';
import { reusableQuery } from '../db/reusable-query.js';
import type { Database, SessionsTable } from '../db/tables.js';

export type SessionRow = Selectable<SessionsTable>;
type Executor = Kysely<Database>;

const insertRow = reusableQuery(
  (
    db: Executor,
    id: string,
    userId: string,
    refreshSeed: string,
    refreshGeneration: number,
    recentRotations: string | null,
    userAgent: string | null,
    ip: string | null,
    createdAt: number,
    lastUsedAt: number,
    expiresAt: number,
  ) =>
    db.insertInto('sessions').values({
      id,
      user_id: userId,
      refresh_seed: refreshSeed,
      refresh_generation: refreshGeneration,
      recent_rotations: recentRotations,
      user_agent: userAgent,
      ip,
      created_at: createdAt,
      last_used_at: lastUsedAt,
      expires_at: expiresAt,
    }),
);

/** Every login's write: one compiled INSERT (a prepared statement on PostgreSQL). */
export async function insertSession(db: Executor, session: SessionRow): Promise<void> {
  await insertRow(
    db,
    session.id,
    session.user_id,
    session.refresh_seed,
    session.refresh_generation,
    session.recent_rotations,
    session.user_agent,
    session.ip,
    session.created_at,
    session.last_used_at,
    session.expires_at,
  );
}

const selectLiveSession = reusableQuery((db: Executor, sessionId: string, now: number) =>
  db.selectFrom('sessions').selectAll().where('id', '=', sessionId).where('expires_at', '>', now),
);

/** The session if it exists and has not reached its absolute expiry. */
export async function findLiveSession(
  db: Executor,
  sessionId: string,
  now: number,
): Promise<SessionRow | undefined> {
  return (await selectLiveSession(db, sessionId, now))[0];
}

export function listLiveSessions(db: Executor, userId: string, now: number): Promise<SessionRow[]> {
  return db
    .selectFrom('sessions')
    .selectAll()
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .execute();
}

/** Moves the session to the next refresh generation, if no concurrent refresh did it first. */
export async function advanceGeneration(
  db: Executor,
  session: SessionRow,
  recentRotations: string,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('sessions')
    .set({
      refresh_generation: session.refresh_generation + 1,
      recent_rotations: recentRotations,
      last_used_at: now,
    })
    .where('id', '=', session.id)
    .where('refresh_generation', '=', session.refresh_generation)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function deleteSession(
  db: Executor,
  sessionId: string,
  userId: string,
): Promise<boolean> {
  const result = await db
    .deleteFrom('sessions')
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return result.numDeletedRows === 1n;
}

export async function deleteSessionsOfUser(db: Executor, userId: string, exceptSessionId?: string) {
  let query = db.deleteFrom('sessions').where('user_id', '=', userId);
  if (exceptSessionId !== undefined) query = query.where('id', '!=', exceptSessionId);
  await query.execute();
}

export async function deleteExpiredSessions(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
}
