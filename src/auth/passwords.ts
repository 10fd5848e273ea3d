import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { passwordChangedMessage, passwordResetMessage } from '../mail/messages.js';
import { normalizePassword } from '../security/password-policy.js';
import { addressOfAccount } from '../accounts/account-address.js';
import { checkCode, consumeCheckedCode } from './one-time-codes.js';
import { requestCode } from './code-requests.js';
import type { Caller } from '../accounts/caller.js';
import { deleteSessionsOfUser } from './sessions.store.js';
import { deleteCode } from './codes.store.js';
import { publishSessionsEnded } from '../events/account-events.js';
import {
  findUserByEmail,
  findUserById,
  markEmailConfirmed,
  replacePasswordHash,
  type UserRow,
} from '../accounts/users.store.js';
import { inTransaction } from '../db/transaction.js';
import { holdLiveSession } from '../accounts/caller.store.js';

/**
 * Runs `write` for `user`, which answers false, having written nothing, when the account's hash is
 * no longer `user.password_hash`; then once more for the account `recheck` finds, since the hash
 * changed meanwhile (a login upgraded its parameters, or a concurrent change replaced it).
 * `refuse` is the answer when that write misses too, or `recheck` finds no account.
 */
export async function writeWhileHashHolds(
  user: UserRow,
  write: (user: UserRow) => Promise<boolean>,
  recheck: () => Promise<UserRow | undefined>,
  refuse: () => Error,
): Promise<UserRow> {
  if (await write(user)) return user;
  const fresh = await recheck();
  if (fresh !== undefined && (await write(fresh))) return fresh;
  throw refuse();
}

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
    return (await ctx.passwordHasher.verify(user.password_hash, normalizePassword(password)))
      ? user
      : undefined;
  });
  if (verified === undefined) throw Errors.incorrectPassword();
  return verified;
}

/**
 * The seed operation: checks the current password before any work on the new one. A hash takes a
 * while, and a session ended meanwhile (the owner revoked it from another device) stops the
 * change: else an intruder's password would replace the owner's and end the owner's sessions.
 */
export async function changePassword(
  ctx: ServiceContext,
  caller: Caller,
  current: string,
  next: string,
): Promise<void> {
  const user = await verifyCurrentPassword(ctx, caller.userId, current);
  const problems = ctx.passwordPolicy.problems(next, user.email, 'new_password');
  if (problems.length > 0) throw Errors.weakPassword(problems);
  if (normalizePassword(next) === normalizePassword(current)) throw Errors.samePassword();

  const newHash = await ctx.passwordHasher.hash(normalizePassword(next));
  const now = ctx.clock();
  let ended: string[] = [];
  const write = (account: UserRow) =>
    inTransaction(ctx.db, async (trx) => {
      if (!(await replacePasswordHash(trx, account.id, account.password_hash, newHash, now)))
        return false;
      // After the account's row, as every writer of the account locks them: two changes from two
      // sessions at once would otherwise each hold the session the other is to delete.
      if (!(await holdLiveSession(trx, caller.sessionId, now))) throw Errors.unauthorized();
      ended = await deleteSessionsOfUser(trx, account.id, caller.sessionId);
      // A reset code in the mailbox would undo the change (someone who changes a password they
      // suspect is known may not think of the code an intruder asked for).
      await deleteCode(trx, account.id, 'reset_password');
      await ctx.outbox.enqueue(
        trx,
        passwordChangedMessage(account.email, ctx.config.publicUrl),
        now,
      );
      return true;
    });
  // A concurrent change replaced the hash: the check against the new one refuses the password.
  const recheck = () => verifyCurrentPassword(ctx, caller.userId, current);
  await writeWhileHashHolds(user, write, recheck, Errors.incorrectPassword);
  publishSessionsEnded(ctx.events, user.id, ended);
  await ctx.limits.clearWrongPasswords(user.id);
}

/** Same answer, and work, for every address; only a registered one gets a code (code-requests.ts). */
export async function forgotPassword(ctx: ServiceContext, rawEmail: string): Promise<void> {
  const email = await addressOfAccount(ctx.db, rawEmail);
  await ctx.limits.withCodeSend(email, 'reset_password', (requestedAt) =>
    requestCode(ctx, email, 'reset_password', requestedAt),
  );
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
  const email = await addressOfAccount(ctx.db, rawEmail);
  const problems = ctx.passwordPolicy.problems(next, email, 'new_password');
  if (problems.length > 0) throw Errors.weakPassword(problems);
  const found = await findUserByEmail(ctx.db, email);
  // Every address takes a try (a decoy one if it has no code) before any answer.
  const checked = await checkCode(ctx, email, found?.id, 'reset_password', code);
  if (found === undefined) throw Errors.invalidCode();

  const newHash = await ctx.passwordHasher.hash(normalizePassword(next));
  const now = ctx.clock();
  let ended: string[] = [];
  const write = (account: UserRow) =>
    inTransaction(ctx.db, async (trx) => {
      if (!(await replacePasswordHash(trx, account.id, account.password_hash, newHash, now)))
        return false;
      await consumeCheckedCode(trx, checked);
      await markEmailConfirmed(trx, account.id, now);
      ended = await deleteSessionsOfUser(trx, account.id);
      await ctx.outbox.enqueue(trx, passwordResetMessage(account.email, ctx.config.publicUrl), now);
      return true;
    });
  // The code proves the address: the new password replaces whatever hash is there now.
  const user = await writeWhileHashHolds(
    found,
    write,
    () => findUserByEmail(ctx.db, email),
    Errors.invalidCode,
  );
  publishSessionsEnded(ctx.events, user.id, ended);
  await ctx.limits.clearWrongPasswords(user.id);
  await ctx.limits.liftLoginLockout(email);
}
