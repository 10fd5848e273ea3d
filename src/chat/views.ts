import { isoTimestamp, isoTimestampOrNull } from '../http/timestamps.js';
import type { MessageRow } from './messages.store.js';

/** API.md's `chat_message` object. */
export interface ChatMessage {
  readonly id: string;
  readonly conversation_id: string;
  readonly seq: number;
  readonly sender_id: string | null;
  readonly text: string | null;
  readonly created_at: string;
  readonly edited_at: string | null;
  readonly deleted: boolean;
  readonly version: number;
  /** To its sender only. */
  readonly client_message_id?: string;
}

/** A message as `viewerId` sees it: its `client_message_id` is shown to its sender only. */
export function chatMessageView(row: MessageRow, viewerId: string | null): ChatMessage {
  return {
    id: row.id,
    conversation_id: row.conversation_id,
    seq: row.seq,
    sender_id: row.sender_id,
    text: row.text,
    created_at: isoTimestamp(row.created_at),
    edited_at: isoTimestampOrNull(row.edited_at),
    deleted: row.deleted_at !== null,
    version: row.version,
    ...(row.sender_id !== null &&
      row.sender_id === viewerId && {
        client_message_id: row.client_message_id,
      }),
  };
}
