import { sql, type Expression, type Kysely } from 'kysely';
import { isPostgres } from '../db/dialect.js';
import { keysetAfter } from '../db/keyset.js';
import { reusableShapedQuery } from '../db/reusable-query.js';
import type { Database } from '../db/tables.js';
import type { Keyset } from '../http/cursor.js';
import { PROFILE_COLUMNS, toProfile, type Profile } from './profiles.store.js';

type Executor = Kysely<Database>;

/** Adds the follow unless it exists; true when a row was really added. */
export async function insertFollow(
  db: Executor,
  followerId: string,
  influencerId: string,
  now: number,
): Promise<boolean> {
  const result = await db
    .insertInto('follows')
    .values({ follower_id: followerId, influencer_id: influencerId, created_at: now })
    .onConflict((oc) => oc.columns(['follower_id', 'influencer_id']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** Removes the follow; true when a row was really removed. */
export async function deleteFollow(
  db: Executor,
  followerId: string,
  influencerId: string,
): Promise<boolean> {
  const result = await db
    .deleteFrom('follows')
    .where('follower_id', '=', followerId)
    .where('influencer_id', '=', influencerId)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Deletes every follow by `followerId`, answering the profiles it followed. */
export async function deleteFollowsBy(db: Executor, followerId: string): Promise<string[]> {
  const rows = await db
    .deleteFrom('follows')
    .where('follower_id', '=', followerId)
    .returning('influencer_id')
    .execute();
  return rows.map((r) => r.influencer_id);
}

/** The profiles `followerId` follows. */
export async function followedBy(db: Executor, followerId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('follows')
    .select('influencer_id')
    .where('follower_id', '=', followerId)
    .execute();
  return rows.map((r) => r.influencer_id);
}

/** Ids per statement: well under both databases' limits on bound parameters. */
const CHUNK = 500;

function chunks<T>(items: readonly T[]): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) result.push(items.slice(i, i + CHUNK));
  return result;
}

/**
 * PostgreSQL: locks these profiles (those that exist) for the rest of the transaction, in id
 * order, so that transactions locking several never wait on each other in a cycle. SQLite runs
 * one writer at a time anyway.
 */
export async function lockProfiles(db: Executor, ids: readonly string[]): Promise<void> {
  if (!isPostgres(db)) return;
  for (const chunk of chunks([...new Set(ids)].sort())) {
    await db
      .selectFrom('influencer_profiles')
      .select('id')
      .where('id', 'in', chunk)
      .orderBy('id')
      .forUpdate()
      .execute();
  }
}

/**
 * PostgreSQL: the lock a followers_count change takes on its profile, taken early (by a follow,
 * before it checks for a block). NO KEY UPDATE, not UPDATE: it must not conflict with the key-share
 * lock that the follow row's own foreign key already holds on the profile.
 */
export async function lockProfileForCount(db: Executor, id: string): Promise<void> {
  if (!isPostgres(db)) return;
  await db
    .selectFrom('influencer_profiles')
    .select('id')
    .where('id', '=', id)
    .forNoKeyUpdate()
    .execute();
}

/**
 * Moves the followers_count of profiles (and their facets' copies) by `delta`, answering the new
 * counts. The profiles' rows are updated first, so concurrent changes queue on their locks.
 */
export async function addToFollowersCounts(
  db: Executor,
  ids: readonly string[],
  delta: number,
): Promise<{ id: string; followers_count: number }[]> {
  const counts = [];
  for (const chunk of chunks(ids)) {
    counts.push(
      ...(await db
        .updateTable('influencer_profiles')
        .set((eb) => ({ followers_count: eb('followers_count', '+', delta) }))
        .where('id', 'in', chunk)
        .returning(['id', 'followers_count'])
        .execute()),
    );
    await db
      .updateTable('influencer_facets')
      .set((eb) => ({ followers_count: eb('followers_count', '+', delta) }))
      .where('influencer_id', 'in', chunk)
      .execute();
  }
  return counts;
}

export async function followersCount(db: Executor, influencerId: string): Promise<number> {
  const row = await db
    .selectFrom('influencer_profiles')
    .select('followers_count')
    .where('id', '=', influencerId)
    .executeTakeFirst();
  return row?.followers_count ?? 0;
}

/** A row if `follower` follows `influencer`: for EXISTS inside another group's statement. */
export function followExists(
  db: Executor,
  follower: Expression<string | null>,
  influencer: Expression<string | null>,
) {
  return db
    .selectFrom('follows')
    .select(sql<number>`1`.as('follows'))
    .where((eb) =>
      eb.and([
        eb(eb.ref('follower_id'), '=', follower),
        eb(eb.ref('influencer_id'), '=', influencer),
      ]),
    );
}

/** Which of `ids` the follower follows. */
export async function followedAmong(
  db: Executor,
  followerId: string,
  ids: readonly string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await followsAmong(db, String(ids.length), [followerId, ...ids], followerId, ids);
  return new Set(rows.map((r) => r.influencer_id));
}

// Asked for every page of profiles: compiled once per number of ids (a page holds at most 100).
const followsAmong = reusableShapedQuery(
  (db: Executor, followerId: string, ids: readonly string[]) =>
    db
      .selectFrom('follows')
      .select('influencer_id')
      .where('follower_id', '=', followerId)
      .where('influencer_id', 'in', ids),
);

export interface FollowedProfile {
  readonly profile: Profile;
  readonly followedAt: number;
}

/** The profiles `followerId` follows, newest follow first, after `after` ([created_at, id]). */
export async function pageOfFollowing(
  db: Executor,
  followerId: string,
  after: Keyset | undefined,
  limit: number,
): Promise<FollowedProfile[]> {
  const rows = await db
    .selectFrom('follows as f')
    .innerJoin('influencer_profiles as p', 'p.id', 'f.influencer_id')
    .select([...PROFILE_COLUMNS.map((c) => `p.${c}` as const), 'f.created_at as followed_at'])
    .where('f.follower_id', '=', followerId)
    .$if(after !== undefined, (qb) =>
      qb.where(keysetAfter('f.created_at', 'f.influencer_id', 'desc', after as Keyset)),
    )
    .orderBy('f.created_at', 'desc')
    .orderBy('f.influencer_id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(({ followed_at, ...row }) => ({
    profile: toProfile(row),
    followedAt: followed_at,
  }));
}

export interface Follower {
  readonly id: string;
  readonly name: string | null;
  readonly avatar_url: string | null;
  readonly followedAt: number;
}

/** The accounts following `influencerId`, newest first, after `after` ([created_at, id]). */
export async function pageOfFollowers(
  db: Executor,
  influencerId: string,
  after: Keyset | undefined,
  limit: number,
): Promise<Follower[]> {
  const rows = await db
    .selectFrom('follows as f')
    .innerJoin('users as u', 'u.id', 'f.follower_id')
    .select(['u.id', 'u.name', 'u.avatar_url', 'f.created_at as followedAt'])
    .where('f.influencer_id', '=', influencerId)
    .$if(after !== undefined, (qb) =>
      qb.where(keysetAfter('f.created_at', 'f.follower_id', 'desc', after as Keyset)),
    )
    .orderBy('f.created_at', 'desc')
    .orderBy('f.follower_id', 'desc')
    .limit(limit)
    .execute();
  return rows;
}
