import type { DmPolicy } from '../db/tables.js';
import { Errors, type ApiError } from '../errors.js';

/**
 * What an influencer's DM policy says to the account starting a conversation with them (and to
 * its sends until the influencer has answered): undefined when it lets them through. The Chat
 * group's sends and starts and this group's `can_message` all ask here.
 */
export function dmPolicyRefusal(policy: DmPolicy, follows: boolean): ApiError | undefined {
  switch (policy) {
    case 'everyone':
      return undefined;
    case 'followers':
      return follows ? undefined : Errors.notFollowing();
    case 'nobody':
      return Errors.messagesDisabled();
  }
}
