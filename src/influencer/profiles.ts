import type { Caller } from '../accounts/caller.js';
import type { ServiceContext } from '../context.js';
import type { Db } from '../db/database.js';
import { isForeignKeyViolation, isUniqueViolation } from '../db/dialect.js';
import { canonicalRowId } from '../db/ids.js';
import type { DmPolicy } from '../db/tables.js';
import { Errors } from '../errors.js';
import type { Category } from './categories.js';
import {
  deleteProfile,
  findProfile,
  findProfileByHandle,
  insertProfiles,
  replaceFacets,
  updateProfile,
  type Profile,
  type ProfileChanges,
} from './profiles.store.js';
import { facetsOf, foldSearchText } from './search-text.js';
import { parseBio } from '../http/field-values.js';
import { parseAvatarUrl, parseDisplayName, parseHandle, parseLinks, type Link } from './values.js';
import { influencerViewOne, type InfluencerView } from './viewer.js';
import { inTransaction } from '../db/transaction.js';

export interface ProfileInput {
  readonly handle: string;
  readonly display_name: string;
  readonly categories: readonly Category[];
  readonly bio?: string | null | undefined;
  readonly avatar_url?: string | null | undefined;
  readonly links?: readonly Link[] | undefined;
  readonly dm_policy?: DmPolicy | undefined;
}

/**
 * A new profile from validated input, its search text folded. The benchmark seeds its directory
 * through this and `insertProfiles`, so seeded rows are exactly what the API would write.
 */
export function newProfile(id: string, input: ProfileInput, now: number): Profile {
  const display_name = parseDisplayName(input.display_name);
  return {
    id,
    handle: parseHandle(input.handle),
    display_name,
    search_name: foldSearchText(display_name),
    bio: parseBio(input.bio ?? null),
    avatar_url: parseAvatarUrl(input.avatar_url ?? null),
    categories: input.categories,
    links: parseLinks(input.links ?? []),
    dm_policy: input.dm_policy ?? 'followers',
    followers_count: 0,
    created_at: now,
    updated_at: now,
  };
}

/** Adds the caller's profile: confirmed e-mail address only, one per account, handles unique. */
export async function createProfile(
  ctx: ServiceContext,
  caller: Caller,
  input: ProfileInput,
): Promise<InfluencerView> {
  if (caller.account.email_confirmed_at === null) throw Errors.emailNotConfirmed();
  if ((await findProfile(ctx.db, caller.userId)) !== undefined) throw Errors.alreadyInfluencer();
  const profile = newProfile(caller.userId, input, ctx.clock());
  try {
    await inTransaction(ctx.db, (trx) =>
      insertProfiles(trx, [{ profile, facets: facetsOf(profile) }]),
    );
  } catch (error) {
    // The account was deleted after its token was checked: as if the token named no account.
    if (isForeignKeyViolation(error)) throw Errors.unauthorized();
    if (!isUniqueViolation(error)) throw error;
    // The loser of a race: for the same account (two creates at once), or for the handle.
    if ((await findProfile(ctx.db, caller.userId)) !== undefined) throw Errors.alreadyInfluencer();
    throw Errors.handleTaken();
  }
  return influencerViewOne(ctx, caller, profile);
}

export async function getMyProfile(ctx: ServiceContext, caller: Caller): Promise<InfluencerView> {
  const profile = await findProfile(ctx.db, caller.userId);
  if (profile === undefined) throw Errors.notInfluencer();
  return influencerViewOne(ctx, caller, profile);
}

/** Only the fields present change; `null` clears bio and avatar_url. */
export async function updateMyProfile(
  ctx: ServiceContext,
  caller: Caller,
  input: Partial<ProfileInput>,
): Promise<InfluencerView> {
  // Without a profile there is nothing to change: 404 before what the fields would have been.
  const current = await findProfile(ctx.db, caller.userId);
  if (current === undefined) throw Errors.notInfluencer();
  const changes = parseChanges(input);
  if (Object.keys(changes).length === 0) return influencerViewOne(ctx, caller, current);
  let updated: Profile | undefined;
  try {
    updated = await inTransaction(ctx.db, async (trx) => {
      const profile = await updateProfile(trx, caller.userId, changes, ctx.clock());
      const listedDifferently = ['handle', 'search_name', 'categories'].some((f) => f in changes);
      if (profile !== undefined && listedDifferently)
        await replaceFacets(trx, profile, facetsOf(profile));
      return profile;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw Errors.handleTaken();
    throw error;
  }
  if (updated === undefined) throw Errors.notInfluencer();
  return influencerViewOne(ctx, caller, updated);
}

/** Copies the known fields by name (never whatever else the body carried), validated. */
function parseChanges(input: Partial<ProfileInput>): ProfileChanges {
  const changes: { -readonly [K in keyof ProfileChanges]: ProfileChanges[K] } = {};
  if (input.handle !== undefined) changes.handle = parseHandle(input.handle);
  if (input.display_name !== undefined) {
    changes.display_name = parseDisplayName(input.display_name);
    changes.search_name = foldSearchText(changes.display_name);
  }
  if (input.categories !== undefined) changes.categories = input.categories;
  if (input.bio !== undefined) changes.bio = parseBio(input.bio);
  if (input.avatar_url !== undefined) changes.avatar_url = parseAvatarUrl(input.avatar_url);
  if (input.links !== undefined) changes.links = parseLinks(input.links);
  if (input.dm_policy !== undefined) changes.dm_policy = input.dm_policy;
  return changes;
}

/** Deletes the caller's profile; the follows of it go too. Its conversations stay (Chat). */
export async function deleteMyProfile(ctx: ServiceContext, caller: Caller): Promise<void> {
  // One statement: the cascade removes its facets and follows atomically. In a transaction of
  // its own for the retry that a deadlock or serialization failure gets.
  const deleted = await inTransaction(ctx.db, (trx) => deleteProfile(trx, caller.userId));
  if (!deleted) throw Errors.notInfluencer();
}

const HANDLE = /^[a-z0-9_]{3,30}$/;

/** `ref` is a profile id or a handle (a handle never looks like an id); any case. */
export async function findProfileByRef(db: Db, ref: string): Promise<Profile | undefined> {
  const lower = ref.toLowerCase();
  if (HANDLE.test(lower)) return findProfileByHandle(db, lower);
  const id = canonicalRowId(ref);
  return id === undefined ? undefined : findProfile(db, id);
}

export async function getProfileByRef(
  ctx: ServiceContext,
  caller: Caller | undefined,
  ref: string,
): Promise<InfluencerView> {
  const profile = await findProfileByRef(ctx.db, ref);
  if (profile === undefined) throw Errors.notFound();
  return influencerViewOne(ctx, caller, profile);
}
