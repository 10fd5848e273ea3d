import type { components, operations } from '../schema.gen.js';

export type ChatMessage = components['schemas']['ChatMessage'];
export type Conversation = components['schemas']['Conversation'];
export type UnreadCounts =
  operations['getUnreadCounts']['responses'][200]['content']['application/json'];
export type ChangesPage =
  operations['listMessageChanges']['responses'][200]['content']['application/json'];

export type MessageEventType = 'message.created' | 'message.updated' | 'message.deleted';

/**
 * A change of a message, handed over once, in `version` order per conversation. Apply it by `id`
 * (insert or replace): `chat_message` is the message as it is after this change.
 */
export interface ChatMessageEvent {
  readonly type: MessageEventType;
  readonly conversation_id: string;
  readonly version: number;
  readonly chat_message: ChatMessage;
  /**
   * `socket`: as the service sent it. `changes`: read while catching up, so it is the message's
   * current state and its type is inferred from it (deleted, else edited, else created): a message
   * created and then edited while the app was away comes as one `message.updated`.
   */
  readonly source: 'socket' | 'changes';
}

/** The caller read a conversation (on any of its devices). Never sent to the peer. */
export interface ConversationReadEvent {
  readonly type: 'conversation.read';
  readonly conversation_id: string;
  readonly last_read_seq: number;
  readonly unread_count: number;
}

export interface TypingEvent {
  readonly type: 'typing';
  readonly conversation_id: string;
  readonly user_id: string;
}

/**
 * After every (re)connection and every `resync_required`, once every tracked conversation has
 * caught up: the first page of the conversation list and the unread counts, fresh, to redraw the
 * list (events such as reads may have been missed meanwhile).
 */
export interface ChatSyncEvent {
  readonly type: 'sync';
  readonly conversations: readonly Conversation[];
  readonly next_cursor: string | null;
  readonly unread: UnreadCounts;
}

export type ChatEvent = ChatMessageEvent | ConversationReadEvent | TypingEvent | ChatSyncEvent;

/** The connection's state, as `state` listeners get it. */
export type ChatState =
  | { readonly status: 'connecting'; readonly attempt: number }
  /** `ready` came: events flow. */
  | { readonly status: 'open'; readonly userId: string; readonly sessionId: string }
  | {
      readonly status: 'reconnecting';
      readonly attempt: number;
      readonly inMs: number;
      /** Why the last socket closed; undefined when it never opened (e.g. the network is down). */
      readonly closeCode: number | undefined;
    }
  /** The session is over (revoked, or no tokens): sign in again, then connect again. */
  | { readonly status: 'signed_out' }
  /** For good: `close()`, or a close code that means stop (4403). */
  | { readonly status: 'closed'; readonly closeCode: number; readonly reason: string };

/** What `on` listens to: each event type; `message` for all three message types; state; errors. */
export interface ChatEventMap {
  'message.created': ChatMessageEvent;
  'message.updated': ChatMessageEvent;
  'message.deleted': ChatMessageEvent;
  message: ChatMessageEvent;
  'conversation.read': ConversationReadEvent;
  typing: TypingEvent;
  sync: ChatSyncEvent;
  state: ChatState;
  /** Something failed that the connection repairs by itself (a catch-up, a renewal); for logs. */
  error: unknown;
}

type Listener<Value> = (value: Value) => void;

/** The listeners of each type. A listener that throws is reported to `error` and harms nothing. */
export class ChatListeners {
  private readonly byType = new Map<keyof ChatEventMap, Set<Listener<never>>>();

  on<Type extends keyof ChatEventMap>(
    type: Type,
    listener: Listener<ChatEventMap[Type]>,
  ): () => void {
    let listeners = this.byType.get(type);
    if (listeners === undefined) this.byType.set(type, (listeners = new Set()));
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }

  emit<Type extends keyof ChatEventMap>(type: Type, value: ChatEventMap[Type]): void {
    for (const listener of this.byType.get(type) ?? []) {
      try {
        (listener as Listener<ChatEventMap[Type]>)(value);
      } catch (error) {
        this.failed(type, error);
      }
    }
  }

  /** One event to the listeners of its type (and of `message`, for a message event). */
  deliver(event: ChatEvent): void {
    switch (event.type) {
      case 'conversation.read':
        return this.emit(event.type, event);
      case 'typing':
        return this.emit(event.type, event);
      case 'sync':
        return this.emit(event.type, event);
      default:
        this.emit(event.type, event);
        this.emit('message', event);
    }
  }

  private failed(type: keyof ChatEventMap, error: unknown): void {
    if (type === 'error') return; // an error listener that throws: nowhere left to tell
    if ((this.byType.get('error')?.size ?? 0) > 0) this.emit('error', error);
    else console.error('chat listener failed', error);
  }
}
