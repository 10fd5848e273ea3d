import type { Kysely } from 'kysely';
import { reusableQuery } from '../db/reusable-query.js';
import type { Database } from '../db/tables.js';
import type { ProfileRow } from './users.store.js';

type Executor = Kysely<Database>;

const selectLiveSessionAccount = reusableQuery((db: Executor, sessionId: string, now: number) =>
  db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select([
      'sessions.last_used_at as session_last_used_at',
      'sessions.expires_at as session_expires_at',
      'users.id',
      'users.email',
      'users.email_confirmed_at',
      'users.name',
      'users.bio',
      'users.avatar_url',
      'users.created_at',
      'users.updated_at',
    ])
    .where('sessions.id', '=', sessionId)
    .where('sessions.expires_at', '>', now),
);

export interface LiveSessionAccount {
  readonly account: ProfileRow;
  readonly sessionLastUsedAt: number;
  readonly sessionExpiresAt: number;
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
  const row = (await selectLiveSessionAccount(db, sessionId, now))[0];
  if (row === undefined) return undefined;
  const {
    session_last_used_at: sessionLastUsedAt,
    session_expires_at: sessionExpiresAt,
    ...account
  } = row;
  return { account, sessionLastUsedAt, sessionExpiresAt: Number(sessionExpiresAt) };
}

/**
 * Holds the caller's session for the rest of a transaction, answering false when it has ended: a
 * write that takes a while (a hash first) and must not outlive its session (a logout, or a revoke
 * from another device, while it ran) checks here. The row lock makes a concurrent revoke on
 * PostgreSQL wait for the transaction, or, come first, the check fail.
 */
export async function holdLiveSession(
  trx: Executor,
  sessionId: string,
  now: number,
): Promise<boolean> {
  const result = await trx
    .updateTable('sessions')
    .set({ last_used_at: now })
    .where('id', '=', sessionId)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
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
