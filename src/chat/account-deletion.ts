import type { AccountDeletionHook } from '../accounts/deletion.js';
import type { EventBus } from '../events/bus.js';
import { deleteConversations, leaveConversations } from './conversations.store.js';
import { membersOf } from './membership.js';
import type { MessageEvent } from './realtime/frame-schemas.js';
import { messagesSentBy, tombstoneForDeletedSender, type MessageRow } from './messages.store.js';
import { chatMessageView } from './views.js';
import { writeOfConversations, type CommittedEvent } from './events.js';

/**
 * The Chat group's part of deleting an account: every message it sent becomes a tombstone with
 * `sender_id: null`, each raising its conversation's version by one; the conversations stay, and
 * (the account's member row and id gone with it) the peer sees `can_send: false`. Once the
 * deletion commits, each tombstone is a `message.deleted` to the peer, in version order with the
 * events of other writes of the same conversations (writeOfConversations). A conversation whose
 * peer was deleted before is no one's any more: it goes, with its messages.
 */
export function tombstoneMessagesOf(deps: {
  readonly clock: () => number;
  readonly events: EventBus;
}): AccountDeletionHook {
  return async (trx, userId) => {
    const now = deps.clock();
    const byConversation = groupByConversation(await messagesSentBy(trx, userId));
    // Other writes' events of these conversations wait for the tombstones', in version order.
    const write = writeOfConversations(deps, [...byConversation.keys()]);
    const deleted = new Map<string, { peers: string[]; message: MessageRow }[]>();
    try {
      // In id order, so two deletions touching the same conversations queue.
      const counts = new Map([...byConversation].map(([id, ids]) => [id, ids.length]));
      const left = await leaveConversations(trx, userId, counts);
      const abandoned = [...left].filter(([, row]) => membersOf(row).length === 0);
      await deleteConversations(
        trx,
        abandoned.map(([id]) => id),
      );
      for (const [conversationId, ids] of byConversation) {
        const raised = left.get(conversationId);
        if (raised === undefined || membersOf(raised).length === 0) continue;
        const peers = membersOf(raised);
        let version = raised.version - ids.length;
        const tombstones = [];
        for (const id of ids) {
          version += 1;
          tombstones.push({
            peers,
            message: await tombstoneForDeletedSender(trx, id, { version, now }),
          });
        }
        deleted.set(conversationId, tombstones);
      }
    } catch (error) {
      write.end();
      throw error;
    }
    return (committed) => {
      if (!committed) return write.end();
      const events = new Map<string, CommittedEvent[]>();
      for (const [conversationId, tombstones] of deleted) {
        events.set(
          conversationId,
          tombstones.map(({ peers, message }) => ({
            version: message.version,
            publish: () =>
              deps.events.publish(peers, {
                type: 'message.deleted',
                conversation_id: message.conversation_id,
                version: message.version,
                chat_message: chatMessageView(message, null),
              } satisfies MessageEvent),
          })),
        );
      }
      write.end(events);
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
