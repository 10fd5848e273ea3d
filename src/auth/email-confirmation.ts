import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { sameAddress } from '../accounts/public-user.js';
import { addressOfAccount } from '../accounts/account-address.js';
import { checkCode, consumeCheckedCode } from './one-time-codes.js';
import { requestCode } from './code-requests.js';
import type { Caller } from '../accounts/caller.js';
import { findUserByEmail, findUserById, markEmailConfirmed } from '../accounts/users.store.js';
import { inTransaction } from '../db/transaction.js';

/** With a bearer token, the address must be the caller's own. */
async function assertCallerOwns(
  ctx: ServiceContext,
  caller: Caller | undefined,
  email: string,
): Promise<void> {
  if (caller === undefined) return;
  const user = await findUserById(ctx.db, caller.userId);
  if (user === undefined || !sameAddress(user.email, email)) throw Errors.emailMismatch();
}

/**
 * E-mails a new confirmation code. The answer, and the work before it, are the same for unknown
 * and already confirmed addresses (which get no e-mail, see code-requests.ts), so it reveals
 * nothing; the 60 s window applies to all of them.
 */
export async function sendConfirmationCode(
  ctx: ServiceContext,
  rawEmail: string,
  caller?: Caller,
): Promise<void> {
  const email = await addressOfAccount(ctx.db, rawEmail);
  await assertCallerOwns(ctx, caller, email);
  await ctx.limits.withCodeSend(email, 'confirm_email', (requestedAt) =>
    requestCode(ctx, email, 'confirm_email', requestedAt),
  );
}

/** One answer (invalid_code) for a wrong, expired, used or burnt code, an unknown or confirmed address. */
export async function confirmEmail(
  ctx: ServiceContext,
  rawEmail: string,
  code: string,
  caller?: Caller,
) {
  const email = await addressOfAccount(ctx.db, rawEmail);
  await assertCallerOwns(ctx, caller, email);
  const user = await findUserByEmail(ctx.db, email);
  // Every address takes a try (a decoy one if it has no code) before any answer.
  const checked = await checkCode(ctx, email, user?.id, 'confirm_email', code);
  if (user === undefined || user.email_confirmed_at !== null) throw Errors.invalidCode();
  await inTransaction(ctx.db, async (trx) => {
    await consumeCheckedCode(trx, checked);
    await markEmailConfirmed(trx, user.id, ctx.clock());
  });
}
