import type {
  ChatMessage,
  ConversationReadEvent,
  MessageEventType,
  TypingEvent,
} from './events.js';

/** What the service sends on the chat socket (API.md, "Real time"), as JSON text frames. */
export type ServerFrame =
  | { readonly type: 'ready'; readonly user_id: string; readonly session_id: string }
  | { readonly type: 'resync_required' }
  | { readonly type: 'pong' }
  | MessageFrame
  | ConversationReadEvent
  | TypingEvent;

export interface MessageFrame {
  readonly type: MessageEventType;
  readonly conversation_id: string;
  readonly version: number;
  readonly chat_message: ChatMessage;
}

type Fields = Record<string, unknown>;

const shapes: Readonly<Record<ServerFrame['type'], (frame: Fields) => boolean>> = {
  ready: (f) => typeof f.user_id === 'string' && typeof f.session_id === 'string',
  resync_required: () => true,
  pong: () => true,
  'message.created': isMessageFrame,
  'message.updated': isMessageFrame,
  'message.deleted': isMessageFrame,
  'conversation.read': (f) =>
    typeof f.conversation_id === 'string' &&
    typeof f.last_read_seq === 'number' &&
    typeof f.unread_count === 'number',
  typing: (f) => typeof f.conversation_id === 'string' && typeof f.user_id === 'string',
};

function isMessageFrame(f: Fields): boolean {
  const message = f.chat_message;
  return (
    typeof f.conversation_id === 'string' &&
    Number.isInteger(f.version) &&
    typeof message === 'object' &&
    message !== null &&
    typeof (message as Fields).id === 'string'
  );
}

/**
 * A frame the connection knows, or undefined: binary data, not JSON, a type added to the service
 * after this client (ignored, so an older client keeps working), or a known type without its fields.
 */
export function parseServerFrame(data: unknown): ServerFrame | undefined {
  if (typeof data !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const fields = value as Fields;
  const type = fields.type;
  if (typeof type !== 'string' || !Object.hasOwn(shapes, type)) return undefined;
  return shapes[type as ServerFrame['type']](fields) ? (value as ServerFrame) : undefined;
}

export const authFrame = (accessToken: string) =>
  JSON.stringify({ type: 'auth', access_token: accessToken });
export const pingFrame = JSON.stringify({ type: 'ping' });
export const typingFrame = (conversationId: string) =>
  JSON.stringify({ type: 'typing', conversation_id: conversationId });
