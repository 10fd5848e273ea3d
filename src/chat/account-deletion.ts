import type { AccountDeletionHook } from '../accounts/deletion.js';
import type { EventBus } from '../events/bus.js';
import { raiseVersion } from './conversations.store.js';
import { membersOf } from './membership.js';
import type { MessageEvent } from './realtime/frame-schemas.js';
import { messagesSentBy, tombstoneForDeletedSender, type MessageRow } from './messages.store.js';
import { chatMessageView } from './views.js';

/**
 * The Chat group's part of deleting an account: every message it sent becomes a tombstone with
 * `sender_id: null`, each raising its conversation's version by one; the conversations stay, and
 * (the account's member row and id gone with it) the peer sees `can_send: false`. Once the
 * deletion commits, each tombstone is a `message.deleted` to the peer.
 */
export function tombstoneMessagesOf(deps: {
  readonly clock: () => number;
  readonly events: EventBus;
}): AccountDeletionHook {
  return async (trx, userId) => {
    const now = deps.clock();
    const deleted: { peers: string[]; message: MessageRow }[] = [];
    // By conversation, in id order, so two deletions touching the same conversations queue.
    for (const [conversationId, ids] of groupByConversation(await messagesSentBy(trx, userId))) {
      const raised = await raiseVersion(trx, conversationId, ids.length);
      const peers = membersOf(raised).filter((id) => id !== userId);
      let version = raised.version - ids.length;
      for (const id of ids) {
        version += 1;
        deleted.push({
          peers,
          message: await tombstoneForDeletedSender(trx, id, { version, now }),
        });
      }
    }
    return () => {
      for (const { peers, message } of deleted) {
        deps.events.publish(peers, {
          type: 'message.deleted',
          conversation_id: message.conversation_id,
          version: message.version,
          chat_message: chatMessageView(message, null),
        } satisfies MessageEvent);
      }
    };
  };
}

function groupByConversation(messages: readonly { id: string; conversation_id: string }[]) {
  const groups = new Map<string, string[]>();
  for (const { id, conversation_id: conversationId } of messages) {
    const ids = groups.get(conversationId);
    if (ids === undefined) groups.set(conversationId, [id]);
    else ids.push(id);
  }
  return groups;
}
