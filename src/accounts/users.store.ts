import type { Kysely, Selectable } from 'kysely';
import { isPostgres } from '../db/dialect.js';
import { reusableQuery } from '../db/reusable-query.js';
import type { Database, UsersTable } from '../db/tables.js';
import { normalizeEmail } from './public-user.js';

export type UserRow = Selectable<UsersTable>;
/** The columns a profile shows: never the hash. */
export type ProfileRow = Omit<
  UserRow,
  'password_hash' | 'email_normalized' | 'password_changed_at'
>;
type Executor = Kysely<Database>;

const selectUserByEmail = reusableQuery((db: Executor, emailNormalized: string) =>
  db.selectFrom('users').selectAll().where('email_normalized', '=', emailNormalized),
);

export async function findUserByEmail(db: Executor, email: string): Promise<UserRow | undefined> {
  return (await selectUserByEmail(db, normalizeEmail(email)))[0];
}

const selectUserById = reusableQuery((db: Executor, id: string) =>
  db.selectFrom('users').selectAll().where('id', '=', id),
);

export async function findUserById(db: Executor, id: string): Promise<UserRow | undefined> {
  return (await selectUserById(db, id))[0];
}

export async function insertUser(db: Executor, user: UserRow): Promise<void> {
  await db.insertInto('users').values(user).execute();
}

/**
 * Replaces the hash only if it is still `expectedHash`: of two concurrent changes, one wins.
 * `changedAt` is when the password changed (`updated_at`, `password_changed_at`); the same password stored again with
 * today's parameters is no change of the account and passes none.
 */
export async function replacePasswordHash(
  db: Executor,
  userId: string,
  expectedHash: string,
  newHash: string,
  changedAt: number | undefined,
): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set(
      changedAt === undefined
        ? { password_hash: newHash }
        : { password_hash: newHash, updated_at: changedAt, password_changed_at: changedAt },
    )
    .where('id', '=', userId)
    .where('password_hash', '=', expectedHash)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function markEmailConfirmed(db: Executor, userId: string, now: number): Promise<void> {
  await db
    .updateTable('users')
    .set({ email_confirmed_at: now, updated_at: now })
    .where('id', '=', userId)
    .where('email_confirmed_at', 'is', null)
    .execute();
}

export type ProfileChanges = Partial<Pick<UsersTable, 'name' | 'bio' | 'avatar_url'>>;

export async function updateProfileFields(
  db: Executor,
  userId: string,
  changes: ProfileChanges,
  now: number,
) {
  await db
    .updateTable('users')
    .set({ name: changes.name, bio: changes.bio, avatar_url: changes.avatar_url, updated_at: now })
    .where('id', '=', userId)
    .execute();
}

/**
 * PostgreSQL: holds the account row until the transaction ends. Every write that names the account
 * (a message it sends, a follow, a block) takes a key-share lock on this row through its foreign
 * key, so such a write either commits before a deletion starts reading the account's data, or waits
 * and then fails for want of the account: none can slip in between and escape the deletion's
 * hooks (a message kept with its text, a follow counted that the cascade then removes). SQLite
 * runs one write transaction at a time.
 */
export async function lockAccount(db: Executor, userId: string): Promise<void> {
  if (!isPostgres(db)) return;
  await db.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
}

export async function deleteUser(db: Executor, userId: string): Promise<void> {
  await db.deleteFrom('one_time_codes').where('user_id', '=', userId).execute();
  await db.deleteFrom('sessions').where('user_id', '=', userId).execute();
  await db.deleteFrom('users').where('id', '=', userId).execute();
}
