import type { DmPolicy } from '../db/tables.js';
import { Errors, type ApiError } from '../errors.js';

/**
 * What an influencer's DM policy says to the account starting a conversation with them (and to
 * its sends until the influencer has answered): undefined when it lets them through. The Chat
 * group's sends and starts and this group's `can_message` all ask here.
 */
export function dmPolicyRefusal(policy: DmPolicy, follows: boolean): ApiError | undefined {
  if (dmPolicyAllows(policy, follows)) return undefined;
  return policy === 'followers' ? Errors.notFollowing() : Errors.messagesDisabled();
}

/** The same as a yes or no, for `can_message` on every profile of a page: no error is built. */
export function dmPolicyAllows(policy: DmPolicy, follows: boolean): boolean {
  return policy === 'everyone' || (policy === 'followers' && follows);
}
