import { Type } from '@sinclair/typebox';
import { nullable } from '../http/schemas.js';

/** The Chat group's objects (API.md): components of the OpenAPI document, added in app.ts. */

const Time = Type.String({ format: 'date-time' });
export const Count = Type.Integer({ minimum: 0 });

export const ChatMessage = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    conversation_id: Type.String({ format: 'uuid' }),
    seq: Type.Integer({ minimum: 1, description: '1, 2, 3, … in its conversation; never reused.' }),
    sender_id: nullable(Type.String({ description: 'null once the sender deleted the account' })),
    text: nullable(Type.String({ description: 'null once deleted' })),
    created_at: Time,
    edited_at: nullable(Time),
    deleted: Type.Boolean(),
    version: Type.Integer({
      minimum: 1,
      description: 'The conversation version of its last change.',
    }),
    client_message_id: Type.Optional(Type.String({ description: 'To its sender only.' })),
  },
  { $id: 'ChatMessage', title: 'ChatMessage' },
);

const Peer = Type.Object(
  {
    id: nullable(Type.String({ format: 'uuid' })),
    name: nullable(Type.String()),
    avatar_url: nullable(Type.String()),
    handle: nullable(Type.String()),
  },
  { description: 'The other member; `id` is null once that account is deleted.' },
);

export const Conversation = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    influencer_id: nullable(Type.String({ format: 'uuid' })),
    peer: Peer,
    accepted: Type.Boolean({
      description: 'The influencer has sent a message: DM policy no longer applies.',
    }),
    last_seq: Count,
    version: Count,
    last_message: nullable(Type.Ref(ChatMessage)),
    unread_count: Count,
    last_read_seq: Count,
    can_send: Type.Boolean(),
    blocked_by_me: Type.Boolean(),
    created_at: Time,
    last_message_at: nullable(Time),
  },
  { $id: 'Conversation', title: 'Conversation' },
);

/** Shared by app.ts (`addSchema`), so the OpenAPI document lists them once as components. */
export const chatComponents = [ChatMessage, Conversation];
