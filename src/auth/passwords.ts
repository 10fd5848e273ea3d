import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { passwordChangedMessage, passwordResetMessage } from '../mail/messages.js';
import { normalizePassword } from '../security/password-policy.js';
import { parseEmailAddress } from '../accounts/public-user.js';
import { checkCode, consumeCheckedCode } from './one-time-codes.js';
import { requestCode } from './code-requests.js';
import type { Caller } from '../accounts/caller.js';
import { deleteSessionsOfUser } from './sessions.store.js';
import { publishSessionsEnded } from '../events/account-events.js';
import {
  findUserByEmail,
  findUserById,
  markEmailConfirmed,
  replacePasswordHash,
  type UserRow,
} from '../accounts/users.store.js';
import { inTransaction } from '../db/transaction.js';

/** How many times a password change writes, when the hash it checked changed before the write. */
const HASH_CHANGE_RETRIES = 2;

/**
 * Verifies the caller's current password, counting wrong ones: after 5 within 15 minutes every
 * attempt is refused, the right password included, until the window passes.
 */
export async function verifyCurrentPassword(
  ctx: ServiceContext,
  userId: string,
  password: string,
): Promise<UserRow> {
  const attempt = await ctx.limits.beginPasswordAttempt(userId);
  const verified = await attempt.check(async () => {
    const user = await findUserById(ctx.db, userId);
    if (user === undefined) throw Errors.unauthorized();
    return (await ctx.hasher.verify(user.password_hash, normalizePassword(password)))
      ? user
      : undefined;
  });
  if (verified === undefined) throw Errors.incorrectPassword();
  return verified;
}

/** The seed operation: checks the current password before any work on the new one. */
export async function changePassword(
  ctx: ServiceContext,
  caller: Caller,
  current: string,
  next: string,
): Promise<void> {
  let user = await verifyCurrentPassword(ctx, caller.userId, current);
  const problems = ctx.policy.problems(next, user.email, 'new_password');
  if (problems.length > 0) throw Errors.weakPassword(problems);
  if (normalizePassword(next) === normalizePassword(current)) throw Errors.samePassword();

  const newHash = await ctx.hasher.hash(normalizePassword(next));
  const now = ctx.clock();
  for (let attempt = 1; ; attempt += 1) {
    const checked = user;
    const replaced = await inTransaction(ctx.db, async (trx) => {
      if (!(await replacePasswordHash(trx, checked.id, checked.password_hash, newHash, now)))
        return false; // nothing written
      await deleteSessionsOfUser(trx, checked.id, caller.sessionId);
      const message = passwordChangedMessage(checked.email, ctx.config.publicUrl);
      await ctx.outbox.enqueue(trx, message, now);
      return true;
    });
    if (replaced) break;
    // The hash changed since it was checked: a login upgraded it (the same password, new
    // parameters), or a concurrent change replaced it, which the check now refuses.
    if (attempt >= HASH_CHANGE_RETRIES) throw Errors.incorrectPassword();
    user = await verifyCurrentPassword(ctx, caller.userId, current);
  }
  publishSessionsEnded(ctx.events, user.id, { all: true, except: caller.sessionId });
  await ctx.limits.clearWrongPasswords(user.id);
}

/** Same answer, and work, for every address; only a registered one gets a code (code-requests.ts). */
export async function forgotPassword(ctx: ServiceContext, rawEmail: string): Promise<void> {
  const email = parseEmailAddress(rawEmail);
  await ctx.limits.takeCodeSend(email, 'reset_password');
  await requestCode(ctx, email, 'reset_password');
}

/**
 * Sets a new password with a reset code. The policy is checked first, so a weak password neither
 * consumes the code nor counts as a wrong try. The code proves the address, so it is confirmed too.
 */
export async function resetPassword(
  ctx: ServiceContext,
  rawEmail: string,
  code: string,
  next: string,
): Promise<void> {
  const email = parseEmailAddress(rawEmail);
  const problems = ctx.policy.problems(next, email, 'new_password');
  if (problems.length > 0) throw Errors.weakPassword(problems);
  let user = await findUserByEmail(ctx.db, email);
  // Every address takes a try (a decoy one if it has no code) before any answer.
  const checked = await checkCode(ctx, email, user?.id, 'reset_password', code);
  if (user === undefined) throw Errors.invalidCode();

  const newHash = await ctx.hasher.hash(normalizePassword(next));
  const now = ctx.clock();
  for (let attempt = 1; ; attempt += 1) {
    const account = user;
    const replaced = await inTransaction(ctx.db, async (trx) => {
      if (!(await replacePasswordHash(trx, account.id, account.password_hash, newHash, now)))
        return false; // nothing written
      await consumeCheckedCode(trx, checked);
      await markEmailConfirmed(trx, account.id, now);
      await deleteSessionsOfUser(trx, account.id);
      await ctx.outbox.enqueue(trx, passwordResetMessage(account.email, ctx.config.publicUrl), now);
      return true;
    });
    if (replaced) break;
    // The hash changed since it was read (a login upgraded it, or another change): the code
    // still proves the address, so the new password replaces whatever hash is there now.
    user = attempt < HASH_CHANGE_RETRIES ? await findUserByEmail(ctx.db, email) : undefined;
    if (user === undefined) throw Errors.invalidCode();
  }
  publishSessionsEnded(ctx.events, user.id, { all: true });
  await ctx.limits.clearWrongPasswords(user.id);
  await ctx.limits.liftLoginLockout(email);
}
