import type { ServiceContext } from '../context.js';
import { findUserByEmail } from '../accounts/users.store.js';
import { confirmationCodeMessage, passwordResetCodeMessage } from '../mail/messages.js';
import type { CodeRequest, ComposeMail, QueuedCodeRequest } from '../mail/outbox.js';
import { codeRequestedAt } from './codes.store.js';
import { issueCode } from './one-time-codes.js';
import { LIMITS } from '../limits/policies.js';

/**
 * The least time between two requests whose codes are both issued, whatever the limits forgot:
 * API.md's 60 s, less a margin for what the limit and the database each take as "now" (read a
 * Redis round trip apart, or on two instances' clocks), so that a client which waited out
 * `Retry-After` is not dropped.
 */
const CODE_REISSUE_MIN_MS = LIMITS.codeSendsPerAddress.windowMs - 5_000;

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
  { address, purpose, requestedAt, retry }: QueuedCodeRequest,
): Promise<ComposeMail | undefined> {
  const user = await findUserByEmail(ctx.db, address);
  // An account created after the request: its registration e-mail carries its own code.
  if (user === undefined || user.created_at > requestedAt) return undefined;
  if (purpose === 'confirm_email' && user.email_confirmed_at !== null) return undefined;
  // The 60 s rule, held where nothing forgets it: the limit that let the request through lives
  // in memory (10,000 windows: a flood of requests for other addresses evicts one) or in Redis
  // (a restart empties it), and a request can get past it while the account is being created
  // (the registration code starts the window). Without this, each forgotten window would mail a
  // fresh code, voiding the last one, with 5 fresh tries. Requests are compared, not sends (a
  // code's created_at is its request's time), so a backlog in the outbox lets one through; an
  // older request than the last code's is dropped (its code would void a newer one); a retry
  // after a failed send finds its own code, and issues it again.
  const lastRequested = await codeRequestedAt(ctx.db, user.id, purpose);
  const own = retry && lastRequested === requestedAt;
  if (lastRequested !== undefined && !own && requestedAt - lastRequested < CODE_REISSUE_MIN_MS)
    return undefined;
  const message = purpose === 'confirm_email' ? confirmationCodeMessage : passwordResetCodeMessage;
  return async () =>
    message(user.email, await issueCode(ctx, ctx.db, user.id, purpose, requestedAt));
}
