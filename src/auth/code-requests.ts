import type { ServiceContext } from '../context.js';
import { findUserByEmail } from '../accounts/users.store.js';
import { confirmationCodeMessage, passwordResetCodeMessage } from '../mail/messages.js';
import type { CodeRequest, ComposeMail, QueuedCodeRequest } from '../mail/outbox.js';
import { issueRequestedCode } from './one-time-codes.js';
import { LIMITS } from '../limits/policies.js';

/** API.md: at most one code e-mail per address and purpose per 60 s. */
const CODE_SEND_WINDOW_MS = LIMITS.codeSendsPerAddress.windowMs;

/**
 * Queues a code e-mail for `email`, whoever it belongs to: one row, the same work for any address,
 * so the answer takes as long for an unknown address as for a registered one. `requestedAt` is
 * the time the limit counted it at, so that the outbox compares what the limit compared.
 */
export async function requestCode(
  ctx: ServiceContext,
  email: string,
  purpose: CodeRequest['purpose'],
  requestedAt: number,
): Promise<void> {
  await ctx.outbox.requestCode(ctx.db, { address: email, purpose, requestedAt });
}

/**
 * Run by the outbox worker, off the request path: a request gets its code (issued when the
 * e-mail is composed, voiding older ones) if the address had an account when it was asked for,
 * and for a confirmation code, one not yet confirmed. Otherwise `undefined`: it is dropped.
 */
export async function planCodeMail(
  ctx: ServiceContext,
  { address, purpose, requestedAt, retry }: QueuedCodeRequest,
): Promise<ComposeMail | undefined> {
  const user = await findUserByEmail(ctx.db, address);
  // An account created after the request: its registration e-mail carries its own code.
  if (user === undefined || user.created_at > requestedAt) return undefined;
  if (purpose === 'confirm_email' && user.email_confirmed_at !== null) return undefined;
  // A reset asked for before the password changed would undo the change (replaceCodeIfDue holds
  // this rule too, against a change committing while the code is being stored).
  if (purpose === 'reset_password' && (user.password_changed_at ?? -Infinity) >= requestedAt)
    return undefined;
  const message = purpose === 'confirm_email' ? confirmationCodeMessage : passwordResetCodeMessage;
  // The 60 s rule again, where nothing forgets it: the limit keeps its windows in memory (10,000:
  // a flood of requests for other addresses evicts one) or in Redis (a restart empties it), and a
  // request can pass it while the account is being written. Each forgotten window would mail a
  // fresh code with 5 fresh tries. Held by the statement that stores the code (replaceCodeIfDue).
  return async () => {
    const rule = { requestedAt, retry, minGapMs: CODE_SEND_WINDOW_MS };
    const code = await issueRequestedCode(ctx, user.id, purpose, rule);
    return code === undefined ? undefined : message(user.email, code);
  };
}
