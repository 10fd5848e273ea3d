import type { UserCard } from '../accounts/user-cards.js';
import { isoTimestamp, isoTimestampOrNull } from '../http/timestamps.js';
import type { ConversationListing } from './listings.store.js';
import { peerOf } from './membership.js';
import { listedPolicyFacts, maySend, type SendFacts } from './send-rules.js';
import { chatMessageView, type ChatMessage } from './views.js';

/** The other member as the caller sees them; every field null once that account is deleted. */
type Peer = { [K in keyof UserCard]: UserCard[K] | null };

/** API.md's `conversation` object, always seen from the caller's side. */
export interface ConversationView {
  readonly id: string;
  readonly influencer_id: string | null;
  readonly peer: Peer;
  readonly accepted: boolean;
  readonly last_seq: number;
  readonly version: number;
  readonly last_message: ChatMessage | null;
  readonly unread_count: number;
  readonly last_read_seq: number;
  readonly can_send: boolean;
  readonly blocked_by_me: boolean;
  readonly created_at: string;
  readonly last_message_at: string | null;
}

const GONE: Peer = Object.freeze({ id: null, name: null, avatar_url: null, handle: null });

/**
 * The views of several conversations of one member (a page of the conversation list, or one
 * conversation), from their listings alone.
 */
export function conversationViews(
  userId: string,
  listings: readonly ConversationListing[],
): ConversationView[] {
  return listings.map((listing) => {
    const { conversation: row, lastMessage, peer, unreadCount, block } = listing;
    const send: SendFacts = {
      // A deleted peer's id is gone from the row; the card is gone with the account.
      peerId: peer === undefined ? null : peerOf(row),
      block,
      ...listedPolicyFacts(row, listing.peerDmPolicy, listing.followsPeer),
    };
    return {
      id: row.id,
      influencer_id: row.influencer_id,
      peer: peer ?? GONE,
      accepted: row.accepted_at !== null,
      last_seq: row.last_seq,
      version: row.version,
      last_message: lastMessage === undefined ? null : chatMessageView(lastMessage, userId),
      unread_count: unreadCount,
      last_read_seq: row.last_read_seq,
      can_send: maySend(send),
      blocked_by_me: block.byMe,
      created_at: isoTimestamp(row.created_at),
      last_message_at: isoTimestampOrNull(row.last_message_at),
    };
  });
}
