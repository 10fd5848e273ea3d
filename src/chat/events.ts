import type { ServiceContext } from '../context.js';
import type { ConversationRow } from './conversations.store.js';
import { membersOf } from './membership.js';
import type { MessageRow } from './messages.store.js';
import type {
  ConversationReadEvent,
  MessageEvent,
  MessageEventType,
} from './realtime/frame-schemas.js';
import { chatMessageView } from './views.js';

/**
 * Hands a committed change of a message to both members' channels. Call it right after the
 * transaction resolves, with no await in between, so events leave in commit (= version) order.
 * Each member gets the message as they see it (the sender's carries its `client_message_id`).
 */
export function publishMessageEvent(
  ctx: ServiceContext,
  type: MessageEventType,
  conversation: Pick<ConversationRow, 'influencer_id' | 'starter_id'>,
  message: MessageRow,
): void {
  for (const member of membersOf(conversation)) {
    ctx.events.publish([member], {
      type,
      conversation_id: message.conversation_id,
      version: message.version,
      chat_message: chatMessageView(message, member),
    } satisfies MessageEvent);
  }
}

/** A committed read, to the reader's own channel only. */
export function publishReadEvent(
  ctx: ServiceContext,
  userId: string,
  read: Omit<ConversationReadEvent, 'type'>,
): void {
  ctx.events.publish([userId], {
    type: 'conversation.read',
    ...read,
  } satisfies ConversationReadEvent);
}
