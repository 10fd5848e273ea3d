import { sql, type Kysely, type Selectable } from 'kysely';
import { isPostgres, typed } from '../db/dialect.js';
import type { CodePurpose, Database, OneTimeCodesTable } from '../db/tables.js';

export type CodeRow = Selectable<OneTimeCodesTable>;
type Executor = Kysely<Database>;

/**
 * Stores a code asked for at `code.created_at` unless the stored one of its user and purpose was
 * asked for less than `minGapMs` before it, or after it; `ownRetry`: unless it is this very
 * request's (same time), which is replaced. One statement, so two instances' workers cannot both
 * pass the rule. Answers whether the code was stored.
 *
 * A retry (its send failed) replaces the code but keeps the tries taken: a code is stored before
 * its send, so every failed send would otherwise hand a guesser five more tries at a code nobody
 * received, several a minute while the mail server is away. Five per request, however many sends.
 */
export async function replaceCodeIfDue(
  db: Executor,
  code: CodeRow,
  { minGapMs, ownRetry }: { minGapMs: number; ownRetry: boolean },
): Promise<boolean> {
  const { user_id, purpose, code_hash, failed_attempts, expires_at, created_at } = code;
  const stored = await db
    .insertInto('one_time_codes')
    .columns(['user_id', 'purpose', 'code_hash', 'failed_attempts', 'expires_at', 'created_at'])
    .expression(
      db
        .selectFrom('users')
        .select([
          'users.id as user_id',
          typed(purpose, 'text').as('purpose'),
          typed(code_hash, 'text').as('code_hash'),
          typed(failed_attempts, 'integer').as('failed_attempts'),
          typed(expires_at, 'bigint').as('expires_at'),
          typed(created_at, 'bigint').as('created_at'),
        ])
        .where('users.id', '=', user_id)
        // A reset code asked for before the password last changed is not stored (nor mailed): it
        // would undo the change. A change committing meanwhile is waited for (FOR SHARE), and then
        // seen; one that comes later deletes this code in its own transaction.
        .$if(purpose === 'reset_password', (q) =>
          q.where((eb) =>
            eb.or([
              eb('users.password_changed_at', 'is', null),
              eb('users.password_changed_at', '<', created_at),
            ]),
          ),
        )
        .$if(isPostgres(db), (q) => q.forShare()),
    )
    .onConflict((oc) =>
      oc
        .columns(['user_id', 'purpose'])
        .doUpdateSet((eb) => ({
          code_hash,
          expires_at,
          created_at,
          failed_attempts: eb
            .case()
            .when('one_time_codes.created_at', '=', created_at)
            .then(eb.ref('one_time_codes.failed_attempts'))
            .else(failed_attempts)
            .end(),
        }))
        .where((eb) =>
          eb.or([
            eb('one_time_codes.created_at', '<=', created_at - minGapMs),
            ...(ownRetry ? [eb('one_time_codes.created_at', '=', created_at)] : []),
          ]),
        ),
    )
    .returning('user_id')
    .execute();
  return stored.length > 0;
}

/**
 * Takes one of the live code's tries and returns the code, to be compared only now. Counting and
 * burning are this one statement: once `maxTries` are taken (or the code expired) nothing matches,
 * so no number of concurrent guesses gets more, and a burnt code never verifies, deleted or not.
 */
export function takeCodeTry(
  db: Executor,
  userId: string,
  purpose: CodePurpose,
  now: number,
  maxTries: number,
): Promise<CodeRow | undefined> {
  return db
    .updateTable('one_time_codes')
    .set({ failed_attempts: sql`failed_attempts + 1` })
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('failed_attempts', '<', maxTries)
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Changes one decoy row, or (`bucket` undefined) runs the same statement matching none. A guess
 * runs it after `takeCodeTry`, on a bucket exactly when that took no try, so every guess commits
 * one changed row: on PostgreSQL such a commit waits for the WAL flush, a no-op does not.
 */
export async function takeDecoyTry(db: Executor, bucket: number | undefined): Promise<void> {
  await db
    .updateTable('code_try_decoys')
    .set({ tries: sql`tries + 1` })
    .where('bucket', '=', bucket ?? -1)
    .execute();
}

/** Deletes exactly this code; false if a concurrent request consumed or replaced it first. */
export async function consumeCode(db: Executor, code: CodeRow): Promise<boolean> {
  const result = await db
    .deleteFrom('one_time_codes')
    .where('user_id', '=', code.user_id)
    .where('purpose', '=', code.purpose)
    .where('code_hash', '=', code.code_hash)
    .executeTakeFirst();
  return result.numDeletedRows === 1n;
}

/** Voids the account's code of `purpose`, if any (a reset code once the password changed). */
export async function deleteCode(
  db: Executor,
  userId: string,
  purpose: CodePurpose,
): Promise<void> {
  await db
    .deleteFrom('one_time_codes')
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .execute();
}

/**
 * Expired codes are refused anyway; this only keeps the table small. A burnt code (its tries all
 * taken) stays until it expires: the fifth try may be the right code, counted and being consumed
 * while this runs, and the row holds the 60 s rule for its address (replaceCodeIfDue), which a
 * deleted row would forget.
 */
export async function deleteExpiredCodes(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('one_time_codes').where('expires_at', '<=', now).execute();
}
