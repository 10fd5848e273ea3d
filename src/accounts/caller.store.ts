import type { Kysely } from 'kysely';
import { reusableShapedQuery } from '../db/reusable-query.js';
import type { Database } from '../db/tables.js';
import type { ProfileRow } from './users.store.js';

type Executor = Kysely<Database>;

/**
 * Scalar subqueries, not a join: better-sqlite3 clears a statement's bindings after each run, and
 * SQLite then prepares a join over bound values again on every run (~8 µs each time, measured);
 * this form runs prepared (~1.5 µs). It is the lookup of every authenticated request. It binds
 * the session id twice, hence the shaped form with its parameters spelled out.
 */
const selectLiveSessionAccount = reusableShapedQuery(
  (db: Executor, sessionId: string, now: number) =>
    db
      .selectFrom('users')
      .select((eb) => [
        eb
          .selectFrom('sessions')
          .select('sessions.last_used_at')
          .where('sessions.id', '=', sessionId)
          .$asScalar()
          .$notNull()
          .as('session_last_used_at'),
        'users.id',
        'users.email',
        'users.email_confirmed_at',
        'users.name',
        'users.bio',
        'users.avatar_url',
        'users.created_at',
        'users.updated_at',
      ])
      .where('users.id', '=', (eb) =>
        eb
          .selectFrom('sessions')
          .select('sessions.user_id')
          .where('sessions.id', '=', sessionId)
          .where('sessions.expires_at', '>', now),
      ),
);

export interface LiveSessionAccount {
  readonly account: ProfileRow;
  readonly sessionLastUsedAt: number;
}

/**
 * A live session with its account's profile, in one lookup: every authenticated request checks
 * its session, and the commonest one (GET /api/profile) then needs nothing more.
 */
export async function findLiveSessionAccount(
  db: Executor,
  sessionId: string,
  now: number,
): Promise<LiveSessionAccount | undefined> {
  const parameters = [sessionId, sessionId, now];
  const row = (await selectLiveSessionAccount(db, '', parameters, sessionId, now))[0];
  if (row === undefined) return undefined;
  const { session_last_used_at: sessionLastUsedAt, ...account } = row;
  return { account, sessionLastUsedAt };
}

export async function touchSession(db: Executor, sessionId: string, now: number): Promise<void> {
  await db.updateTable('sessions').set({ last_used_at: now }).where('id', '=', sessionId).execute();
}

/** Which of `sessionIds` are still live (one query; for sockets that may have missed an end). */
export async function findLiveSessionIds(
  db: Executor,
  sessionIds: readonly string[],
  now: number,
): Promise<Set<string>> {
  if (sessionIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('sessions')
    .select('id')
    .where('id', 'in', sessionIds)
    .where('expires_at', '>', now)
    .execute();
  return new Set(rows.map((row) => row.id));
}
