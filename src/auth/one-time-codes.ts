import type { Kysely } from 'kysely';
import type { ServiceContext } from '../context.js';
import type { CodePurpose, Database } from '../db/tables.js';
import { Errors } from '../errors.js';
import { CODE_MAX_FAILED_ATTEMPTS, CODE_TTL_MS, generateCode } from '../security/one-time-codes.js';
import {
  consumeCode,
  findCode,
  recordWrongCode,
  replaceCode,
  type CodeRow,
} from './codes.store.js';

/** Creates a code for the user (voiding older ones of the purpose) and returns it for the e-mail. */
export async function issueCode(
  ctx: ServiceContext,
  trx: Kysely<Database>,
  userId: string,
  purpose: CodePurpose,
): Promise<string> {
  const code = generateCode();
  const now = ctx.clock();
  await replaceCode(trx, {
    user_id: userId,
    purpose,
    code_hash: ctx.codes.hash(userId, purpose, code),
    failed_attempts: 0,
    expires_at: now + CODE_TTL_MS,
    created_at: now,
  });
  return code;
}

/**
 * Checks a candidate code without consuming it: a wrong one counts a try (the 5th burns the code).
 * Returns the stored code, to be consumed with `consumeCode` in the transaction that applies it.
 */
export async function checkCode(
  ctx: ServiceContext,
  userId: string,
  purpose: CodePurpose,
  candidate: string,
): Promise<CodeRow> {
  const stored = await findCode(ctx.db, userId, purpose);
  if (stored === undefined || stored.expires_at <= ctx.clock()) throw Errors.invalidCode();
  if (!ctx.codes.matches(stored.code_hash, userId, purpose, candidate)) {
    await recordWrongCode(ctx.db, stored, CODE_MAX_FAILED_ATTEMPTS);
    throw Errors.invalidCode();
  }
  return stored;
}

/** Consumes the checked code inside `trx`; a concurrent use that consumed it first makes this fail. */
export async function consumeCheckedCode(trx: Kysely<Database>, code: CodeRow): Promise<void> {
  if (!(await consumeCode(trx, code))) throw Errors.invalidCode();
}
