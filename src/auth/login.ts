import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { normalizePassword } from '../security/password-policy.js';
import { couldBeStoredAddress, publicUser, type PublicUser } from '../accounts/public-user.js';
import { startSession, type ClientInfo, type TokenResponse } from './sessions.js';
import {
  findUserByEmail,
  findUserById,
  replacePasswordHash,
  type UserRow,
} from '../accounts/users.store.js';

/**
 * Signs a user in. Unknown address and wrong password give the same answer after the same work
 * (a verify against a dummy hash), and both count towards the per-account and per-IP limits.
 * The attempt is counted before the hash is checked, so a burst of concurrent guesses cannot all
 * pass the limit while their hashes run.
 */
export async function login(
  ctx: ServiceContext,
  email: string,
  password: string,
  client: ClientInfo,
): Promise<{ user: PublicUser } & TokenResponse> {
  const attempt = await ctx.limits.beginLoginAttempt(email, client.ip);
  const candidate = normalizePassword(password);
  const user = await attempt.check(async () => {
    // An address longer than any stored one, or with a control character, fails like any unknown
    // one. Any other is looked up, not checked against today's rule: an account registered under
    // an earlier one still signs in.
    const found = couldBeStoredAddress(email) ? await findUserByEmail(ctx.db, email) : undefined;
    if (found === undefined) {
      await ctx.passwordHasher.verifyDummy(candidate);
      return undefined;
    }
    return (await ctx.passwordHasher.verify(found.password_hash, candidate)) ? found : undefined;
  });
  if (user === undefined) throw Errors.invalidCredentials();
  const verified = ctx.passwordHasher.needsRehash(user.password_hash)
    ? await upgradeHash(ctx, user, candidate)
    : user;
  const tokens = await startSession(ctx, verified, client);
  return { user: publicUser(user), ...tokens };
}

/**
 * Stores the password again with today's parameters, and answers the account with the hash the
 * session is to be started under. A concurrent login of the same password may have stored its own
 * upgrade first: that hash, once it verifies this password too, signs this login in as well. Any
 * other change (the password changed meanwhile) keeps the hash this login checked, and
 * startSession refuses it.
 */
async function upgradeHash(
  ctx: ServiceContext,
  user: UserRow,
  candidate: string,
): Promise<UserRow> {
  const upgraded = await ctx.passwordHasher.hash(candidate);
  if (await replacePasswordHash(ctx.db, user.id, user.password_hash, upgraded, undefined))
    return { ...user, password_hash: upgraded };
  const current = await findUserById(ctx.db, user.id);
  if (current === undefined || ctx.passwordHasher.needsRehash(current.password_hash)) return user;
  return (await ctx.passwordHasher.verify(current.password_hash, candidate)) ? current : user;
}
