import type { AccountDeletionHook } from '../accounts/deletion.js';
import {
  addToFollowersCounts,
  deleteFollowsBy,
  followedBy,
  lockProfiles,
} from './follows.store.js';
import { deleteProfile } from './profiles.store.js';

/**
 * The Influencer group's part of deleting an account: every follow by the account goes, each
 * followed profile's count down by one; then the account's own profile, with the follows of it.
 */
export const deleteInfluencerData: AccountDeletionHook = async (trx, userId) => {
  // Every profile this touches is locked first, all in id order: two accounts deleted at once
  // (following each other, or the same profiles) then queue instead of deadlocking.
  await lockProfiles(trx, [...(await followedBy(trx, userId)), userId]);
  // The rows really deleted are the ones whose counts move, whatever happened since.
  await addToFollowersCounts(trx, await deleteFollowsBy(trx, userId), -1);
  await deleteProfile(trx, userId);
};
