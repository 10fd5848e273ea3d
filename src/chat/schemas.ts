import { Errors } from '../errors.js';
import { Type } from '@sinclair/typebox';
import { NextCursor, pageQuery } from '../http/cursor.js';
import { matching, withErrors } from '../http/schemas.js';
import { ChatMessage, Conversation, Count } from './objects.js';

/**
 * Request and response schemas of the Chat group: they validate (no coercion: query values are
 * strings of digits) and are the OpenAPI document. Membership is checked before any of them (see
 * routes.ts); rules that need more than a schema (the message text after NFC) live in the services.
 */

const tags = ['Chat'];
/** The `limit` of a messages page and of a changes page: the schemas' and the routes' one figure. */
export const MESSAGES_PAGE = { max: 100, default: 50 } as const;
export const CHANGES_PAGE = { max: 200, default: 100 } as const;

/** A whole number 1–`max` (a multiple of 100 up to 900) written in a query string. */
function limitQuery({ max, default: defaultValue }: { max: number; default: number }) {
  const hundreds = max / 100;
  const middle = hundreds > 1 ? `|[1-${hundreds - 1}][0-9]{2}` : '';
  return Type.String({
    ...matching(`^(?:[1-9][0-9]?${middle}|${max})$`, `must be a whole number from 1 to ${max}`),
    description: `1–${max}, default ${defaultValue}.`,
  });
}
/** Any whole number ≥ 0, however long (routes.ts reads one above every seq or version as that). */
const Position = (description: string) =>
  Type.String({
    ...matching('^[0-9]+$', 'must be a whole number'),
    description: `${description} (a whole number).`,
  });

const ById = Type.Object({ id: Type.String({ description: 'The conversation id.' }) });
const MessageById = Type.Object({ id: Type.String({ description: 'The message id.' }) });
const MessageText = Type.String({
  maxLength: 8000,
  description:
    '1–2000 code points after NFC, at least one visible (not white space, not only zero-width characters), no control characters but \\n and \\t.',
});
const withMessage = (text: string, options: { description?: string; headers?: object } = {}) =>
  Type.Object({ message: Type.Literal(text), chat_message: Type.Ref(ChatMessage) }, options);

const WithConversation = (description: string) =>
  Type.Object({ conversation: Type.Ref(Conversation) }, { description });

export const startConversationSchema = {
  tags,
  operationId: 'startConversation',
  summary: 'Start a conversation with an influencer, or get the pair’s existing one',
  body: Type.Object({
    // No outer bound but the body's size: a string that names no influencer is 404 (API.md).
    influencer_id: Type.String({ description: 'The influencer’s id (user id).' }),
  }),
  response: withErrors(
    {
      201: WithConversation('Created.'),
      200: WithConversation('The pair already had a conversation (whoever started it).'),
    },
    Errors.cannotMessageSelf,
    Errors.notFollowing,
    Errors.messagesDisabled,
    Errors.cannotMessage,
    Errors.userBlocked,
    Errors.notFound,
    Errors.chatRateLimited,
  ),
};

export const listConversationsSchema = {
  tags,
  operationId: 'listConversations',
  summary: 'The caller’s conversations, latest message first',
  querystring: Type.Object({
    ...pageQuery(),
    unread_only: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description: 'Only conversations with unread messages (default false).',
      }),
    ),
  }),
  response: withErrors(
    {
      200: Type.Object({
        conversations: Type.Array(Type.Ref(Conversation)),
        next_cursor: NextCursor,
      }),
    },
    Errors.invalidCursor,
  ),
};

export const getConversationSchema = {
  tags,
  operationId: 'getConversation',
  summary: 'One conversation, from the caller’s side',
  params: ById,
  response: withErrors(
    { 200: Type.Object({ conversation: Type.Ref(Conversation) }) },
    Errors.notFound,
  ),
};

export const unreadSchema = {
  tags,
  operationId: 'getUnreadCounts',
  summary: 'Unread messages over all of the caller’s conversations',
  response: withErrors({
    200: Type.Object({ total_unread_count: Count, unread_conversations: Count }),
  }),
};

export const sendMessageSchema = {
  tags,
  operationId: 'sendMessage',
  summary: 'Send a message, exactly once per client_message_id',
  params: ById,
  body: Type.Object({
    client_message_id: Type.String({
      ...matching('^[A-Za-z0-9_-]{1,64}$', 'must be 1–64 letters (A–Z, a–z), digits, "_" or "-"'),
      description: '1–64 of [A-Za-z0-9_-] (a UUID is advised); unique per sender, forever.',
    }),
    text: MessageText,
  }),
  response: withErrors(
    {
      201: withMessage('Message sent', { description: 'Stored and numbered.' }),
      200: withMessage('Message sent', {
        description:
          'A replay: the key was used before with the same conversation and text. The stored message; nothing new is stored.',
        headers: { 'Idempotent-Replayed': Type.Literal('true') },
      }),
    },
    Errors.validationFailed,
    Errors.notFollowing,
    Errors.messagesDisabled,
    Errors.cannotMessage,
    Errors.userBlocked,
    Errors.notFound,
    Errors.idempotencyKeyReused,
    Errors.chatRateLimited,
  ),
};

export const listMessagesSchema = {
  tags,
  operationId: 'listMessages',
  summary: 'A page of messages in ascending seq: before or after a seq, or the newest',
  params: ById,
  querystring: Type.Object({
    before: Type.Optional(Position('Messages with a lower seq')),
    after: Type.Optional(Position('Messages with a higher seq; 0: the oldest')),
    limit: Type.Optional(limitQuery(MESSAGES_PAGE)),
  }),
  response: withErrors(
    {
      200: Type.Object({
        messages: Type.Array(Type.Ref(ChatMessage)),
        has_more: Type.Boolean(),
        last_seq: Count,
      }),
    },
    Errors.validationFailed,
    Errors.notFound,
  ),
};

export const listChangesSchema = {
  tags,
  operationId: 'listMessageChanges',
  summary: 'Messages created, edited or deleted after a version (catching up)',
  params: ById,
  querystring: Type.Object({
    since_version: Position('The version the client has'),
    limit: Type.Optional(limitQuery(CHANGES_PAGE)),
  }),
  response: withErrors(
    {
      200: Type.Object({
        messages: Type.Array(Type.Ref(ChatMessage)),
        version: Type.Integer({
          minimum: 0,
          description:
            'Every change up to this version is in this page or an earlier one: the since_version of the next page, or the client’s new version once has_more is false.',
        }),
        has_more: Type.Boolean(),
      }),
    },
    Errors.notFound,
  ),
};

export const markReadSchema = {
  tags,
  operationId: 'markConversationRead',
  summary: 'Mark the conversation read up to a seq (default: its last message)',
  params: ById,
  body: Type.Object({ seq: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 })) }),
  response: withErrors(
    { 200: Type.Object({ last_read_seq: Count, unread_count: Count }) },
    Errors.validationFailed,
    Errors.notFound,
  ),
};

export const editMessageSchema = {
  tags,
  operationId: 'editMessage',
  summary: 'Replace the text of one’s own message, within 15 minutes of sending it',
  params: MessageById,
  body: Type.Object({ text: MessageText }),
  response: withErrors(
    { 200: withMessage('Message edited') },
    Errors.validationFailed,
    Errors.notMessageAuthor,
    Errors.editWindowExpired,
    Errors.cannotMessage,
    Errors.userBlocked,
    Errors.notFound,
    Errors.messageDeleted,
  ),
};

export const deleteMessageSchema = {
  tags,
  operationId: 'deleteMessage',
  summary: 'Delete one’s own message (it keeps its seq as a tombstone)',
  params: MessageById,
  response: withErrors(
    { 200: withMessage('Message deleted') },
    Errors.notMessageAuthor,
    Errors.notFound,
  ),
};
