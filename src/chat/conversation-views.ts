import { userCards, type UserCard } from '../accounts/user-cards.js';
import type { ServiceContext } from '../context.js';
import type { MemberConversationRow } from './conversations.store.js';
import { findMessagesBySeq } from './messages.store.js';
import { peerOf } from './membership.js';
import { sendFacts, sendRefusal, type SendFacts } from './send-rules.js';
import { unreadCounts } from './unread.store.js';
import { chatMessageView, isoTime, type ChatMessage } from './views.js';

/** The other member as the caller sees them; every field null once that account is deleted. */
export type Peer = { [K in keyof UserCard]: UserCard[K] | null };

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
 * The views of several conversations of one member, in a fixed number of queries however many
 * there are (a page of the conversation list, or one conversation).
 */
export async function conversationViews(
  ctx: ServiceContext,
  userId: string,
  rows: readonly MemberConversationRow[],
): Promise<ConversationView[]> {
  const withMessages = rows.filter((row) => row.last_seq > 0);
  const [cards, facts, unread, lastMessages] = await Promise.all([
    userCards(
      ctx.db,
      rows.map((row) => peerOf(row)).filter((id): id is string => id !== null),
    ),
    sendFacts(ctx, userId, rows),
    unreadCounts(
      ctx.db,
      userId,
      withMessages.map((row) => row.id),
    ),
    findMessagesBySeq(
      ctx.db,
      withMessages.map((row) => ({ conversationId: row.id, seq: row.last_seq })),
    ),
  ]);
  const lastMessageOf = new Map(lastMessages.map((message) => [message.conversation_id, message]));
  return rows.map((row) => {
    const peerId = peerOf(row);
    const send = facts.get(row.id) as SendFacts;
    const lastMessage = lastMessageOf.get(row.id);
    return {
      id: row.id,
      influencer_id: row.influencer_id,
      peer: (peerId !== null && cards.get(peerId)) || GONE,
      accepted: row.accepted_at !== null,
      last_seq: row.last_seq,
      version: row.version,
      last_message: lastMessage === undefined ? null : chatMessageView(lastMessage, userId),
      unread_count: unread.get(row.id) ?? 0,
      last_read_seq: row.last_read_seq,
      can_send: sendRefusal(send) === undefined,
      blocked_by_me: send.block.byMe,
      created_at: new Date(row.created_at).toISOString(),
      last_message_at: isoTime(row.last_message_at),
    };
  });
}
