import type { Kysely, Selectable } from 'kysely';
import { reusableQuery } from '../db/reusable-query.js';
import type { Database, DmPolicy, InfluencerProfilesTable } from '../db/tables.js';
import type { Category } from './categories.js';
import type { Link } from './values.js';

type Executor = Kysely<Database>;
type ProfileRow = Selectable<InfluencerProfilesTable>;

/** A stored influencer profile, its JSON columns parsed. */
export interface Profile extends Omit<ProfileRow, 'categories' | 'links'> {
  readonly categories: readonly Category[];
  readonly links: readonly Link[];
}

/** A profile with the directory facets it is listed under (search-text.ts `facetsOf`). */
export interface ProfileEntry {
  readonly profile: Profile;
  readonly facets: readonly string[];
}

export const PROFILE_COLUMNS = [
  'id',
  'handle',
  'display_name',
  'search_name',
  'bio',
  'avatar_url',
  'categories',
  'links',
  'dm_policy',
  'followers_count',
  'created_at',
  'updated_at',
] as const;

/**
 * Field by field rather than a spread of the row: a directory page builds 20 of these, and copying
 * by name (which also leaves out whatever else the row carries) took half the time.
 */
export function toProfile(row: ProfileRow): Profile {
  return {
    id: row.id,
    handle: row.handle,
    display_name: row.display_name,
    search_name: row.search_name,
    bio: row.bio,
    avatar_url: row.avatar_url,
    categories: JSON.parse(row.categories) as Category[],
    links: JSON.parse(row.links) as Link[],
    dm_policy: row.dm_policy,
    followers_count: row.followers_count,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function toRow({ categories, links, ...plain }: Profile): ProfileRow {
  return { ...plain, categories: JSON.stringify(categories), links: JSON.stringify(links) };
}

/** Rows per INSERT: well under both databases' limits on bound parameters. */
const CHUNK = 500;

/**
 * Inserts profiles with their facets; in the caller's transaction. Also the benchmark's way of
 * seeding a directory straight into the database.
 */
export async function insertProfiles(db: Executor, entries: readonly ProfileEntry[]) {
  for (let i = 0; i < entries.length; i += CHUNK) {
    const chunk = entries.slice(i, i + CHUNK);
    await db
      .insertInto('influencer_profiles')
      .values(chunk.map((e) => toRow(e.profile)))
      .execute();
    const facets = chunk.flatMap((e) => facetRows(e.profile, e.facets));
    for (let j = 0; j < facets.length; j += CHUNK) {
      await db
        .insertInto('influencer_facets')
        .values(facets.slice(j, j + CHUNK))
        .execute();
    }
  }
}

/** The index rows listing `profile` under `facets`, each with copies of its sort keys and text. */
export function facetRows(
  profile: Pick<Profile, 'id' | 'followers_count' | 'created_at' | 'search_name' | 'handle'>,
  facets: readonly string[],
) {
  const { id, followers_count, created_at, search_name, handle } = profile;
  return facets.map((facet) => ({
    influencer_id: id,
    facet,
    followers_count,
    created_at,
    search_name,
    handle,
  }));
}

/** Lists `profile` under exactly `facets`, with its current sort keys. */
export async function replaceFacets(db: Executor, profile: Profile, facets: readonly string[]) {
  await db.deleteFrom('influencer_facets').where('influencer_id', '=', profile.id).execute();
  await db.insertInto('influencer_facets').values(facetRows(profile, facets)).execute();
}

const selectById = reusableQuery((db: Executor, id: string) =>
  db.selectFrom('influencer_profiles').select(PROFILE_COLUMNS).where('id', '=', id),
);

const selectByHandle = reusableQuery((db: Executor, handle: string) =>
  db.selectFrom('influencer_profiles').select(PROFILE_COLUMNS).where('handle', '=', handle),
);

export async function findProfile(db: Executor, id: string): Promise<Profile | undefined> {
  const row = (await selectById(db, id))[0];
  return row && toProfile(row);
}

export async function findProfileByHandle(db: Executor, handle: string) {
  const row = (await selectByHandle(db, handle))[0];
  return row && toProfile(row);
}

/** The DM policies of the profiles among `ids` that exist. */
export async function dmPoliciesOf(
  db: Executor,
  ids: readonly string[],
): Promise<Map<string, DmPolicy>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('influencer_profiles')
    .select(['id', 'dm_policy'])
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((row) => [row.id, row.dm_policy]));
}

export type ProfileChanges = Partial<
  Pick<
    Profile,
    'handle' | 'display_name' | 'search_name' | 'bio' | 'avatar_url' | 'categories' | 'links'
  > &
    Pick<Profile, 'dm_policy'>
>;

/** Applies `changes` and answers the updated profile (locked until the transaction ends). */
export async function updateProfile(
  db: Executor,
  id: string,
  changes: ProfileChanges,
  now: number,
): Promise<Profile | undefined> {
  const { categories, links, ...plain } = changes;
  const row = await db
    .updateTable('influencer_profiles')
    .set({
      ...plain,
      ...(categories && { categories: JSON.stringify(categories) }),
      ...(links && { links: JSON.stringify(links) }),
      updated_at: now,
    })
    .where('id', '=', id)
    .returning(PROFILE_COLUMNS)
    .executeTakeFirst();
  return row && toProfile(row);
}

/** Deletes the profile; its facets and the follows of it go with it (ON DELETE CASCADE). */
export async function deleteProfile(db: Executor, id: string): Promise<boolean> {
  const result = await db.deleteFrom('influencer_profiles').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
