import type { BlockRelation } from '../blocks/service.js';
import type { Db } from '../db/database.js';
import { canonicalRowId } from '../db/ids.js';
import { Errors } from '../errors.js';
import { findMemberConversation, type MemberConversationRow } from './conversations.store.js';
import { findMessage, type MessageRow } from './messages.store.js';

/**
 * Proof that `userId` is a member of the conversation: every chat service that reads or changes
 * a conversation takes one, and only these lookups make one. To anyone else the conversation and
 * its messages do not exist: the same `404 not_found` as an unknown id.
 */
export interface Membership {
  readonly userId: string;
  readonly conversation: MemberConversationRow;
  /** The blocks between the members when the membership was looked up. */
  readonly block: BlockRelation;
}

/** A message, and the caller's membership of its conversation. */
export interface MessageAccess extends Membership {
  readonly message: MessageRow;
}

export async function findMembership(
  db: Db,
  userId: string,
  conversationId: string,
): Promise<Membership> {
  const id = canonicalRowId(conversationId);
  const found = id === undefined ? undefined : await findMemberConversation(db, id, userId);
  if (found === undefined) throw Errors.notFound();
  return { userId, ...found };
}

export async function findMessageAccess(
  db: Db,
  userId: string,
  messageId: string,
): Promise<MessageAccess> {
  const id = canonicalRowId(messageId);
  const message = id === undefined ? undefined : await findMessage(db, id);
  if (message === undefined) throw Errors.notFound();
  const membership = await findMembership(db, userId, message.conversation_id);
  return { ...membership, message };
}

/** The other member of a conversation as one member sees it; null once that account is deleted. */
export function peerOf(row: MemberConversationRow): string | null {
  return row.starter_id === row.member_id ? row.influencer_id : row.starter_id;
}

/** The members' ids still held by accounts. */
export function membersOf(conversation: {
  influencer_id: string | null;
  starter_id: string | null;
}): string[] {
  return [conversation.influencer_id, conversation.starter_id].filter(
    (id): id is string => id !== null,
  );
}
