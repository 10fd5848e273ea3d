import { sql, type Kysely, type Selectable } from 'kysely';
import { isPostgres, typed } from '../db/dialect.js';
import { reusableQuery } from '../db/reusable-query.js';
import type { Database, SessionsTable } from '../db/tables.js';

export type SessionRow = Selectable<SessionsTable>;
type Executor = Kysely<Database>;

const insertRowWhileHashIs = reusableQuery(
  (
    db: Executor,
    id: string,
    refreshSeed: string,
    refreshGeneration: number,
    recentRotations: string | null,
    userAgent: string | null,
    ip: string | null,
    createdAt: number,
    lastUsedAt: number,
    expiresAt: number,
    userId: string,
    passwordHash: string,
  ) =>
    db
      .insertInto('sessions')
      .columns([
        'id',
        'refresh_seed',
        'refresh_generation',
        'recent_rotations',
        'user_agent',
        'ip',
        'created_at',
        'last_used_at',
        'expires_at',
        'user_id',
      ])
      .expression(
        db
          .selectFrom('users')
          .select([
            typed(id, 'text').as('id'),
            typed(refreshSeed, 'text').as('refresh_seed'),
            typed(refreshGeneration, 'integer').as('refresh_generation'),
            typed(recentRotations, 'text').as('recent_rotations'),
            typed(userAgent, 'text').as('user_agent'),
            typed(ip, 'text').as('ip'),
            typed(createdAt, 'bigint').as('created_at'),
            typed(lastUsedAt, 'bigint').as('last_used_at'),
            typed(expiresAt, 'bigint').as('expires_at'),
            'users.id as user_id',
          ])
          .where('users.id', '=', userId)
          .where('users.password_hash', '=', passwordHash)
          // A password change or reset that has updated the row waits to commit, then this finds
          // the new hash and inserts nothing; one that comes later waits for this session, then
          // deletes it with the others. SQLite runs one write at a time.
          .$if(isPostgres(db), (q) => q.forShare()),
      )
      .returning((eb) => [
        'id',
        // The account's sessions, counted in the same statement (PostgreSQL without the new one,
        // SQLite with it): only an account at the cap pays for a second one (endSessionsBeyond).
        eb
          .selectFrom('sessions as counted')
          .select((count) => count.fn.countAll<number>().as('n'))
          .whereRef('counted.user_id', '=', 'sessions.user_id')
          .as('sessions_of_user'),
      ]),
);

/**
 * Inserts the session only while its account still has `passwordHash`, the hash its password was
 * checked against: a login that checked the old password while the password was changed (or the
 * account deleted) gets no session, instead of one the change did not see to revoke. One
 * statement. Answers, if the session was inserted, about how many sessions the account has.
 */
export async function insertSessionWhileHashIs(
  db: Executor,
  session: SessionRow,
  passwordHash: string,
): Promise<{ sessionsOfUser: number } | undefined> {
  const inserted = await insertRowWhileHashIs(
    db,
    session.id,
    session.refresh_seed,
    session.refresh_generation,
    session.recent_rotations,
    session.user_agent,
    session.ip,
    session.created_at,
    session.last_used_at,
    session.expires_at,
    session.user_id,
    passwordHash,
  );
  const row = inserted[0];
  return row === undefined ? undefined : { sessionsOfUser: Number(row.sessions_of_user ?? 0) };
}

/**
 * Ends the account's sessions beyond its `keep` most recently used live ones (ties: the newest
 * first), and answers their ids. Expired sessions the sweep has not deleted yet go first: they
 * count in the cap's trigger, but no live session loses its place to one.
 */
export async function endSessionsBeyond(
  db: Executor,
  userId: string,
  keep: number,
  now: number,
): Promise<string[]> {
  const beyond = db
    .selectFrom('sessions')
    .select('id')
    .where('user_id', '=', userId)
    .orderBy(sql`case when expires_at > ${now} then 0 else 1 end`)
    .orderBy('last_used_at', 'desc')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    // SQLite needs a LIMIT before an OFFSET, PostgreSQL a limit that is not negative.
    .limit(Number.MAX_SAFE_INTEGER)
    .offset(keep);
  const ended = await db
    .deleteFrom('sessions')
    .where('user_id', '=', userId)
    .where('id', 'in', beyond)
    .returning('id')
    .execute();
  return ended.map((row) => row.id);
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

/** Deletes the user's session; with `liveAt`, only if it has not expired by then. */
export async function deleteSession(
  db: Executor,
  sessionId: string,
  userId: string,
  liveAt?: number,
): Promise<boolean> {
  let query = db.deleteFrom('sessions').where('id', '=', sessionId).where('user_id', '=', userId);
  if (liveAt !== undefined) query = query.where('expires_at', '>', liveAt);
  const result = await query.executeTakeFirst();
  return result.numDeletedRows === 1n;
}

/** Answers the ids of the sessions it ended. */
export async function deleteSessionsOfUser(
  db: Executor,
  userId: string,
  exceptSessionId?: string,
): Promise<string[]> {
  let query = db.deleteFrom('sessions').where('user_id', '=', userId);
  if (exceptSessionId !== undefined) query = query.where('id', '!=', exceptSessionId);
  const ended = await query.returning('id').execute();
  return ended.map((row) => row.id);
}

export async function deleteExpiredSessions(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
}
