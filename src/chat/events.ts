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

/** Writes of one conversation whose events wait for each other, per event bus (per app). */
const pendingWrites = new WeakMap<object, Map<string, PendingWrites>>();

interface PendingWrites {
  writing: number;
  readonly ready: CommittedEvent[];
}

/** An event a write committed, with the conversation version it carries. */
export interface CommittedEvent {
  readonly version: number;
  readonly publish: () => void;
}

/** Events held for one conversation at most; past it, they go out as they are (still sorted). */
const MAX_HELD = 64;

/** A write of `conversationId` begins: events of the conversation committed meanwhile wait. */
function beginWrite(bus: object, conversationId: string): void {
  let byConversation = pendingWrites.get(bus);
  if (byConversation === undefined) pendingWrites.set(bus, (byConversation = new Map()));
  let pending = byConversation.get(conversationId);
  if (pending === undefined)
    byConversation.set(conversationId, (pending = { writing: 0, ready: [] }));
  pending.writing += 1;
}

/**
 * A write of `conversationId` has ended with `committed` (none if it failed): once no write of
 * the conversation is under way, everything held goes out in version order.
 */
function endWrite(bus: object, conversationId: string, committed: readonly CommittedEvent[]) {
  const byConversation = pendingWrites.get(bus);
  const pending = byConversation?.get(conversationId);
  if (byConversation === undefined || pending === undefined) return;
  pending.writing -= 1;
  pending.ready.push(...committed);
  if (pending.writing === 0) byConversation.delete(conversationId);
  if (pending.writing === 0 || pending.ready.length >= MAX_HELD) {
    const ready = pending.ready.splice(0).sort((a, b) => a.version - b.version);
    for (const event of ready) event.publish();
  }
}

/**
 * Runs `write`, a change that raises the conversation's version, and publishes what it committed
 * once every write of that conversation overlapping it on this instance has ended too, all in
 * version order. Writes of one conversation commit in version order (its row lock, or SQLite's
 * one writer), but concurrent ones come back from separate PostgreSQL connections in any order:
 * published as they came back, a socket that had seen nothing of the conversation yet took the
 * first it got as its starting point and dropped the lower versions behind it.
 */
export async function writeInVersionOrder<T extends { readonly version: number }>(
  ctx: Pick<ServiceContext, 'events'>,
  conversationId: string,
  write: () => Promise<T>,
  publish: (committed: T) => void,
): Promise<T> {
  beginWrite(ctx.events, conversationId);
  let committed: CommittedEvent[] = [];
  try {
    const done = await write();
    committed = [{ version: done.version, publish: () => publish(done) }];
    return done;
  } finally {
    endWrite(ctx.events, conversationId, committed);
  }
}

/**
 * The same for one write of several conversations (an account deletion's tombstones): begun for
 * each before the write changes any, ended once, with the events it committed by conversation
 * (none if it rolled back).
 */
export function writeOfConversations(
  ctx: Pick<ServiceContext, 'events'>,
  conversationIds: readonly string[],
) {
  for (const id of conversationIds) beginWrite(ctx.events, id);
  let ended = false;
  return {
    end(committed: ReadonlyMap<string, readonly CommittedEvent[]> = new Map()): void {
      if (ended) return;
      ended = true;
      for (const id of conversationIds) endWrite(ctx.events, id, committed.get(id) ?? []);
    },
  };
}
