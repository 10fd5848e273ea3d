import type { ServiceContext } from '../context.js';
import { findUserByEmail } from '../accounts/users.store.js';
import { confirmationCodeMessage, passwordResetCodeMessage } from '../mail/messages.js';
import type { CodeRequest, ComposeMail } from '../mail/outbox.js';
import { issueCode } from './one-time-codes.js';
import { LIMITS } from '../limits/policies.js';

const CODE_SEND_WINDOW_MS = LIMITS.codeSendsPerAddress.windowMs;

/**
 * Queues a code e-mail for `email`, whoever it belongs to: one row, the same work for any address,
 * so the answer takes as long for an unknown address as for a registered one.
 */
export async function requestCode(
  ctx: ServiceContext,
  email: string,
  purpose: CodeRequest['purpose'],
): Promise<void> {
  await ctx.outbox.requestCode(ctx.db, { address: email, purpose, requestedAt: ctx.clock() });
}

/**
 * Run by the outbox worker, off the request path: a request gets its code (issued when the
 * e-mail is composed, voiding older ones) if the address had an account when it was asked for,
 * and for a confirmation code, one not yet confirmed. Otherwise `undefined`: it is dropped.
 */
export async function planCodeMail(
  ctx: ServiceContext,
  { address, purpose, requestedAt }: CodeRequest,
): Promise<ComposeMail | undefined> {
  const user = await findUserByEmail(ctx.db, address);
  // An account created after the request: its registration e-mail carries its own code.
  if (user === undefined || user.created_at > requestedAt) return undefined;
  // Inside the window that the registration e-mail started (API.md): a request that got past
  // the limit while the account was being created gets nothing, not a code voiding that one.
  if (purpose === 'confirm_email' && requestedAt - user.created_at < CODE_SEND_WINDOW_MS)
    return undefined;
  if (purpose === 'confirm_email' && user.email_confirmed_at !== null) return undefined;
  const message = purpose === 'confirm_email' ? confirmationCodeMessage : passwordResetCodeMessage;
  return async () => message(user.email, await issueCode(ctx, ctx.db, user.id, purpose));
}
