import type { Caller } from '../accounts/caller.js';
import type { ServiceContext } from '../context.js';
import type { Db } from '../db/database.js';
import { isForeignKeyViolation } from '../db/dialect.js';
import { Errors } from '../errors.js';
import { splitPage, type Page } from '../http/cursor.js';
import { isoTimestamp } from '../http/timestamps.js';
import {
  addToFollowersCounts,
  deleteFollow,
  followersCount,
  insertFollow,
  lockProfileForCount,
  pageOfFollowers,
  pageOfFollowing,
} from './follows.store.js';
import { findProfile, type Profile } from './profiles.store.js';
import { findProfileByRef } from './profiles.js';
import { influencerView, viewerOf } from './viewer.js';
import { assertNotBlocked } from './blocking.js';
import { inTransaction } from '../db/transaction.js';

/**
 * Whether the caller may follow `target`: not oneself; and not across a block, which is checked
 * inside the follow's transaction (`assertNotBlocked`), where a concurrent block cannot slip by.
 */
function assertMayFollow(caller: Caller, target: Profile): void {
  if (target.id === caller.userId) throw Errors.cannotFollowSelf();
}

/** Follows `ref`; repeating it changes nothing and counts against no limit. */
export async function follow(ctx: ServiceContext, caller: Caller, ref: string) {
  const target = await findProfileByRef(ctx.db, ref);
  if (target === undefined) throw Errors.notFound();
  assertMayFollow(caller, target);
  const count = await changeFollow(ctx, caller, target.id, +1, async (trx) => {
    // The row first: until it commits, no other transaction sees it, so it is in no one's way;
    // its foreign key's share lock makes blocks and deletions of the profile wait for it.
    const added = await insertFollow(trx, caller.userId, target.id, ctx.clock());
    await assertNotBlocked(trx, caller.userId, target.id);
    return added;
  });
  return { following: true as const, followers_count: count };
}

/** Stops following `ref`; repeating it changes nothing and counts against no limit. */
export async function unfollow(ctx: ServiceContext, caller: Caller, ref: string) {
  const target = await findProfileByRef(ctx.db, ref);
  if (target === undefined) throw Errors.notFound();
  const count = await changeFollow(ctx, caller, target.id, -1, async (trx) => {
    // The profile's lock before the row's, the order blocks and deletions take them: the other
    // order deadlocked with a block of the same pair, and with the profile's deletion.
    await lockProfileForCount(trx, target.id);
    return deleteFollow(trx, caller.userId, target.id);
  });
  return { following: false as const, followers_count: count };
}

/**
 * One transaction: `change` adds or removes the follow row; only when it really did, the change
 * is counted against the caller's hourly limit (a refusal rolls the row back) and the profile's
 * followers_count moves by `delta`. Answers the count after it.
 */
async function changeFollow(
  ctx: ServiceContext,
  caller: Caller,
  influencerId: string,
  delta: 1 | -1,
  change: (trx: Db) => Promise<boolean>,
): Promise<number> {
  let takeBack: (() => Promise<void>) | undefined;
  // Counted, but the transaction did not commit: give the slot back (once per attempt).
  const giveBack = async () => {
    await takeBack?.();
    takeBack = undefined;
  };
  try {
    return await inTransaction(
      ctx.db,
      async (trx) => {
        if (!(await change(trx))) return followersCount(trx, influencerId);
        takeBack = await ctx.limits.takeFollowChange(caller.userId);
        const [updated] = await addToFollowersCounts(trx, [influencerId], delta);
        return updated?.followers_count ?? 0;
      },
      giveBack,
    );
  } catch (error) {
    // The profile (or the caller's account) was deleted since it was looked up.
    if (isForeignKeyViolation(error)) throw Errors.notFound();
    throw error;
  }
}

/** The profiles the caller follows, newest follow first. */
export async function listFollowing(ctx: ServiceContext, caller: Caller, page: Page) {
  const rows = await pageOfFollowing(ctx.db, caller.userId, page.after, page.limit + 1);
  const { rows: shown, next } = splitPage(rows, page.limit, (r) => ({
    value: r.followedAt,
    id: r.profile.id,
  }));
  const viewer = await viewerOf(
    ctx,
    caller,
    shown.map((r) => r.profile),
  );
  const influencers = shown.map((r) => ({
    ...influencerView(r.profile, viewer),
    followed_at: isoTimestamp(r.followedAt),
  }));
  return { influencers, next };
}

/** The accounts following the caller's profile, newest first. */
export async function listMyFollowers(ctx: ServiceContext, caller: Caller, page: Page) {
  if ((await findProfile(ctx.db, caller.userId)) === undefined) throw Errors.notInfluencer();
  const rows = await pageOfFollowers(ctx.db, caller.userId, page.after, page.limit + 1);
  const { rows: shown, next } = splitPage(rows, page.limit, (r) => ({
    value: r.followedAt,
    id: r.id,
  }));
  // Field by field: the page is written by JSON.stringify (serializer.ts `writeAsBuilt`).
  const followers = shown.map(({ id, name, avatar_url, followedAt }) => ({
    id,
    name,
    avatar_url,
    followed_at: isoTimestamp(followedAt),
  }));
  return { followers, next };
}
