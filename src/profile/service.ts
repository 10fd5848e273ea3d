import { NAME_MAX, publicUser, type PublicUser } from '../accounts/public-user.js';
import { verifyCurrentPassword, writeWhileHashHolds } from '../auth/passwords.js';
import type { Caller } from '../accounts/caller.js';
import { deleteAccountRecords } from '../accounts/deletion.js';
import { holdLiveSession } from '../accounts/caller.store.js';
import {
  findUserById,
  updateProfileFields,
  type ProfileChanges,
  type UserRow,
} from '../accounts/users.store.js';
import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { publishAccountDeleted } from '../events/account-events.js';
import { parseBio, parseName } from '../http/field-values.js';
import { parseHttpsUrl } from '../http/https-url.js';

/** Authentication already read the account, in the same lookup that checked the session. */
export function getProfile(caller: Caller): PublicUser {
  return publicUser(caller.account);
}

const EDITABLE_FIELDS = ['name', 'bio', 'avatar_url'] as const;

/** Sets the given fields; `null` clears one, an absent field is left as it is, others are ignored. */
export async function updateProfile(
  ctx: ServiceContext,
  caller: Caller,
  changes: ProfileChanges,
): Promise<PublicUser> {
  // Copy by name: the body may carry unknown fields, which must never reach the UPDATE.
  const defined: ProfileChanges = {};
  for (const field of EDITABLE_FIELDS) {
    if (changes[field] !== undefined) defined[field] = changes[field];
  }
  if (Object.keys(defined).length === 0) return getProfile(caller);
  if (typeof defined.name === 'string') defined.name = parseName(defined.name, 'name', NAME_MAX);
  if (typeof defined.bio === 'string') parseBio(defined.bio);
  if (typeof defined.avatar_url === 'string') parseHttpsUrl(defined.avatar_url, 'avatar_url');
  await updateProfileFields(ctx.db, caller.userId, defined, ctx.clock());
  const updated = await findUserById(ctx.db, caller.userId);
  if (updated === undefined) throw Errors.unauthorized(); // deleted meanwhile
  return publicUser(updated);
}

/**
 * Deletes the account with its sessions and codes, and every group's data of it (one
 * transaction); the address may register again. A hash takes a while, and whatever happens
 * meanwhile wins: the transaction deletes only while the caller's session is live and the hash
 * is the one the password was checked against (a password change or reset from another device,
 * which ends this session, stops an intruder's deletion already under way).
 */
export async function deleteAccount(
  ctx: ServiceContext,
  caller: Caller,
  password: string,
): Promise<void> {
  const user = await verifyCurrentPassword(ctx, caller.userId, password);
  const remove = (account: UserRow) =>
    deleteAccountRecords(ctx.db, account.id, ctx.accountDeletionHooks, async (trx) => {
      const live = await holdLiveSession(trx, caller.sessionId, ctx.clock());
      if (!live) throw Errors.unauthorized(); // the session ended meanwhile
      return (await findUserById(trx, account.id))?.password_hash === account.password_hash;
    });
  // Another hash (a login upgraded its parameters) is checked again; a new password refuses this one.
  const recheck = () => verifyCurrentPassword(ctx, caller.userId, password);
  await writeWhileHashHolds(user, remove, recheck, Errors.incorrectPassword);
  publishAccountDeleted(ctx.events, user.id);
  await ctx.limits.clearWrongPasswords(user.id);
}
