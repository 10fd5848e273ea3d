import type { ServiceContext } from '../context.js';
import { findUserByEmail } from '../accounts/users.store.js';
import { confirmationCodeMessage, passwordResetCodeMessage } from '../mail/messages.js';
import type { CodeRequest, ComposeMail } from '../mail/outbox.js';
import { codeRequestedAt } from './codes.store.js';
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
  if (purpose === 'confirm_email' && user.email_confirmed_at !== null) return undefined;
  // The 60 s rule, held where nothing forgets it: the limit that let the request through lives
  // in memory (10,000 windows: a flood of other addresses evicts one) or in Redis (a restart
  // empties it), and a request can get past it while the account is being created (the
  // registration code starts the window). Without this, each forgotten window would mean a
  // fresh code, voiding the last one, with 5 fresh tries. Requests are compared, not sends, so
  // a backlog in the outbox does not let several through; this request's own code (issued by an
  // attempt whose send failed) is issued again.
  const lastRequested = await codeRequestedAt(ctx.db, user.id, purpose);
  if (lastRequested !== undefined && lastRequested !== requestedAt) {
    if (Math.abs(requestedAt - lastRequested) < CODE_SEND_WINDOW_MS) return undefined;
  }
  const message = purpose === 'confirm_email' ? confirmationCodeMessage : passwordResetCodeMessage;
  return async () =>
    message(user.email, await issueCode(ctx, ctx.db, user.id, purpose, requestedAt));
}
