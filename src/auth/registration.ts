import { randomUUID } from 'node:crypto';
import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { normalizePassword } from '../security/password-policy.js';
import {
  normalizeEmail,
  parseEmailAddress,
  publicUser,
  type PublicUser,
} from '../accounts/public-user.js';
import { startSession, type ClientInfo, type TokenResponse } from './sessions.js';
import { findUserByEmail, insertUser, type UserRow } from '../accounts/users.store.js';
import { inTransaction } from '../db/transaction.js';
import { parseName } from '../http/field-values.js';
import { NAME_MAX } from '../accounts/public-user.js';

export interface Registration {
  readonly email: string;
  readonly password: string;
  readonly name?: string | undefined;
}

/** Creates the account, e-mails a confirmation code and signs the new user in. */
export async function register(
  ctx: ServiceContext,
  input: Registration,
  client: ClientInfo,
): Promise<{ user: PublicUser } & TokenResponse> {
  const email = parseEmailAddress(input.email);
  const name = input.name === undefined ? null : parseName(input.name, 'name', NAME_MAX);
  const problems = ctx.passwordPolicy.problems(input.password, email, 'password');
  if (problems.length > 0) throw Errors.weakPassword(problems);
  if (await findUserByEmail(ctx.db, email)) throw Errors.emailTaken();

  const passwordHash = await ctx.passwordHasher.hash(normalizePassword(input.password));
  const now = ctx.clock();
  const user: UserRow = {
    id: randomUUID(),
    email,
    email_normalized: normalizeEmail(email),
    password_hash: passwordHash,
    email_confirmed_at: null,
    name,
    bio: null,
    avatar_url: null,
    created_at: now,
    updated_at: now,
    password_changed_at: null,
  };
  // Before the account exists: a code request for the address that comes in as soon as it does
  // must find the window started, or it would mail a second code that voids this one.
  await ctx.limits.recordCodeSend(email, 'confirm_email');
  try {
    await inTransaction(ctx.db, async (trx) => {
      await insertUser(trx, user);
      // A request, as any code e-mail is: its code is issued when the e-mail is sent (a send
      // retried after an SMTP outage longer than a code's 10 minutes still carries a live one).
      await ctx.outbox.requestCode(trx, {
        address: email,
        purpose: 'confirm_email',
        requestedAt: now,
      });
    });
  } catch (error) {
    // Two registrations of one address at once: the unique index lets one through.
    if (await findUserByEmail(ctx.db, email)) throw Errors.emailTaken();
    throw error;
  }
  const tokens = await startSession(ctx, user, client);
  return { user: publicUser(user), ...tokens };
}
