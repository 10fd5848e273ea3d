import { blockRelation } from '../blocks/service.js';
import type { BlockHook } from '../blocks/hooks.js';
import type { Db } from '../db/database.js';
import { Errors } from '../errors.js';
import {
  addToFollowersCounts,
  deleteFollow,
  lockProfileForCount,
  lockProfiles,
} from './follows.store.js';

/**
 * A block ends the follows between the two accounts, both ways, each real removal taking its
 * profile's count down by one. Both profiles are locked first (in id order), as a follow locks the
 * one it follows, so a follow and a block of the same pair queue instead of crossing.
 */
export const removeFollowsOnBlock: BlockHook = async (trx, blockerId, blockedId) => {
  await lockProfiles(trx, [blockerId, blockedId]);
  for (const [follower, followed] of [
    [blockerId, blockedId],
    [blockedId, blockerId],
  ] as const) {
    if (await deleteFollow(trx, follower, followed))
      await addToFollowersCounts(trx, [followed], -1);
  }
};

/**
 * Refuses a follow across a block, inside the follow's transaction, once the followed profile is
 * locked: a block that locked it first has committed and is seen (the follow rolls back); one
 * that comes later waits for the follow to commit and then removes it.
 */
export async function assertNotBlocked(trx: Db, followerId: string, influencerId: string) {
  await lockProfileForCount(trx, influencerId);
  const block = await blockRelation(trx, followerId, influencerId);
  if (block.byMe) throw Errors.userBlocked();
  if (block.byThem) throw Errors.cannotFollow();
}
