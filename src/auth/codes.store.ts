import type { Kysely, Selectable } from 'kysely';
import type { CodePurpose, Database, OneTimeCodesTable } from '../db/tables.js';

export type CodeRow = Selectable<OneTimeCodesTable>;
type Executor = Kysely<Database>;

/** Stores a new code, replacing (so voiding) any older one of the same user and purpose. */
export async function replaceCode(db: Executor, code: CodeRow): Promise<void> {
  await db
    .deleteFrom('one_time_codes')
    .where('user_id', '=', code.user_id)
    .where('purpose', '=', code.purpose)
    .execute();
  await db.insertInto('one_time_codes').values(code).execute();
}

export function findCode(
  db: Executor,
  userId: string,
  purpose: CodePurpose,
): Promise<CodeRow | undefined> {
  return db
    .selectFrom('one_time_codes')
    .selectAll()
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .executeTakeFirst();
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

/** Counts a wrong try; the try that reaches `maxFailures` deletes (burns) the code. */
export async function recordWrongCode(
  db: Executor,
  code: CodeRow,
  maxFailures: number,
): Promise<void> {
  const matchThisCode = db
    .updateTable('one_time_codes')
    .set((eb) => ({ failed_attempts: eb('failed_attempts', '+', 1) }))
    .where('user_id', '=', code.user_id)
    .where('purpose', '=', code.purpose)
    .where('code_hash', '=', code.code_hash);
  await matchThisCode.execute();
  await db
    .deleteFrom('one_time_codes')
    .where('user_id', '=', code.user_id)
    .where('purpose', '=', code.purpose)
    .where('failed_attempts', '>=', maxFailures)
    .execute();
}

export async function deleteExpiredCodes(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('one_time_codes').where('expires_at', '<=', now).execute();
}
