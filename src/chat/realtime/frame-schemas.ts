import { Type, type Static, type TObject } from '@sinclair/typebox';
import { ChatMessage, Count } from '../objects.js';

/**
 * Every frame of the chat socket (API.md, "Real time") as a schema, by its `type`: what the socket
 * parses, what the publishers build (their objects are checked against these types), what delivery
 * lets out to a client, and the AsyncAPI document at /asyncapi.json. One list, so a frame cannot
 * exist without being documented.
 */

// Client -> server.

const AuthFrame = Type.Object(
  {
    type: Type.Literal('auth'),
    // Any string, the empty one too: a client whose token store is empty hears 4401 (a bad token)
    // at once, not 4408 five seconds later for a frame ignored as malformed.
    access_token: Type.String({ description: 'An access token (a JWT).' }),
  },
  {
    description:
      'Authenticates the socket (browsers cannot set `Authorization` on the upgrade): the first frame, within 5 s. Sent again with a fresh token of the same user before `exp`, it renews the socket silently.',
  },
);
const TypingFrame = Type.Object(
  {
    type: Type.Literal('typing'),
    conversation_id: Type.String({ minLength: 1, maxLength: 64, description: 'Its conversation.' }),
  },
  {
    description:
      'The user types in a conversation: relayed to the peer, dropped silently beyond one per 3 s per user and conversation or 20 in 10 s per user, for a non-member, and wherever a send would be refused (a deleted peer, a block, DM policy).',
  },
);
const PingFrame = Type.Object(
  { type: Type.Literal('ping') },
  {
    description:
      'Answered by `pong` at once (an `auth` or `typing` frame sent before it may still be being checked).',
  },
);

/** What a client may send. Unknown fields are ignored; so is any other frame. */
export const ClientFrames = { auth: AuthFrame, typing: TypingFrame, ping: PingFrame };
export const ClientFrame = Type.Union(Object.values(ClientFrames));
export type ClientFrame = Static<typeof ClientFrame>;

// Server -> client: the socket's own frames.

const ReadyFrame = Type.Object(
  {
    type: Type.Literal('ready'),
    user_id: Type.String({ format: 'uuid' }),
    session_id: Type.String({ format: 'uuid' }),
  },
  {
    description:
      'Authenticated: events flow from now on. Refetch the conversation list and `unread`, and catch up every cached conversation whose `version` moved.',
  },
);
const PongFrame = Type.Object(
  { type: Type.Literal('pong') },
  { description: 'The answer to `ping`.' },
);
const ResyncRequiredFrame = Type.Object(
  { type: Type.Literal('resync_required') },
  {
    description:
      'Events may have been lost (the instance lost its Redis subscription): refetch as after `ready`.',
  },
);

const ControlFrames = {
  ready: ReadyFrame,
  pong: PongFrame,
  resync_required: ResyncRequiredFrame,
};
export type ReadyFrame = Static<typeof ReadyFrame>;

// Server -> client: events, published after commit on the user's channel (any instance).

const messageEvent = <T extends string>(type: T, description: string) =>
  Type.Object(
    {
      type: Type.Literal(type),
      conversation_id: Type.String({ format: 'uuid' }),
      version: Type.Integer({
        minimum: 1,
        description:
          'The conversation version of this change: apply it when it is one above yours, drop it when not above, page `changes` when further above.',
      }),
      chat_message: Type.Ref(ChatMessage),
    },
    { description },
  );

const ConversationReadEvent = Type.Object(
  {
    type: Type.Literal('conversation.read'),
    conversation_id: Type.String({ format: 'uuid' }),
    last_read_seq: Count,
    unread_count: Count,
  },
  { description: 'The user marked a conversation read: to every socket of the reader only.' },
);
const TypingEvent = Type.Object(
  {
    type: Type.Literal('typing'),
    conversation_id: Type.String({ format: 'uuid' }),
    user_id: Type.String({ format: 'uuid', description: 'Who types: the peer.' }),
  },
  { description: 'The peer types in a conversation; never echoed to the typist.' },
);

/**
 * The events a client may see. Anything else on a user's channel (session and account events, or
 * a type some group adds later) stays inside the service: delivery lets out only these.
 */
export const ClientEvents = {
  'message.created': messageEvent('message.created', 'A message was sent, to both members.'),
  'message.updated': messageEvent('message.updated', 'A message was edited, to both members.'),
  'message.deleted': messageEvent(
    'message.deleted',
    'A message was deleted (it stays as a tombstone: `text: null`, `deleted: true`), to both members; also for each message of an account being deleted.',
  ),
  'conversation.read': ConversationReadEvent,
  typing: TypingEvent,
};
export type MessageEventType = Extract<keyof typeof ClientEvents, `message.${string}`>;
export type MessageEvent = Static<(typeof ClientEvents)[MessageEventType]>;
export type ConversationReadEvent = Static<typeof ConversationReadEvent>;
export type TypingEvent = Static<typeof TypingEvent>;

/** Every frame the server writes, by `type` (`typing` is also a client frame, of another shape). */
export const ServerFrames: Record<string, TObject> = { ...ControlFrames, ...ClientEvents };
