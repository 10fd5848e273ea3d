import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../context.js';
import { callerOf } from '../http/authenticate.js';
import { WRITTEN_AS_BUILT } from '../http/serializer.js';
import { getConversation, listConversations, unreadSummary } from './conversations.js';
import { startConversation } from './starting.js';
import {
  findMembership,
  findMessageAccess,
  type Membership,
  type MessageAccess,
} from './membership.js';
import { deleteMessage, editMessage, listChanges, listMessages } from './messages.js';
import { markRead } from './reading.js';
import * as schemas from './schemas.js';
import { sendMessage } from './sending.js';

interface Options {
  readonly ctx: ServiceContext;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by a chat route's membership hook, before the body and query are validated. */
    chatAccess?: Membership | MessageAccess;
  }
}

const isMessageAccess = (access: Membership): access is MessageAccess => 'message' in access;

/** Reads a validated optional query number (a string of digits). */
const numberOr = <T>(value: string | undefined, fallback: T) =>
  value === undefined ? fallback : Number(value);

/** Above every seq and version (INTEGER columns): what any larger position reads as. */
const MAX_POSITION = 2 ** 31 - 1;

/** Reads a validated optional seq or version (digits, of any length), capped at MAX_POSITION. */
const positionOr = <T>(value: string | undefined, fallback: T) =>
  value === undefined ? fallback : Math.min(Number(value), MAX_POSITION);

/**
 * The Chat group's HTTP shape. Membership runs as a preValidation hook, so a non-member gets the
 * unknown-id 404 before the body or query is even looked at, while the TypeBox schemas stay the
 * one description that both validates and documents each route. A service can only be handed a
 * `Membership` these lookups made.
 */
export const chatRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { ctx }) => {
  const config = { access: 'bearer' } as const;
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const member = async (request: FastifyRequest) => {
    request.chatAccess = await findMembership(ctx.db, callerOf(request).userId, idOf(request));
  };
  const author = async (request: FastifyRequest) => {
    request.chatAccess = await findMessageAccess(ctx.db, callerOf(request).userId, idOf(request));
  };
  const membershipOf = (request: FastifyRequest): Membership => {
    if (request.chatAccess === undefined) throw new Error('chat route without its membership hook');
    return request.chatAccess;
  };
  const messageAccessOf = (request: FastifyRequest): MessageAccess => {
    const access = membershipOf(request);
    if (!isMessageAccess(access)) throw new Error('message route without its message hook');
    return access;
  };
  const onConversation = { config, preValidation: member };
  const onMessage = { config, preValidation: author };

  app.post(
    '/api/chat/conversations',
    { config, schema: schemas.startConversationSchema },
    async (request, reply) => {
      const started = await startConversation(ctx, callerOf(request), request.body.influencer_id);
      return reply.code(started.created ? 201 : 200).send({ conversation: started.conversation });
    },
  );

  app.get(
    '/api/chat/conversations',
    { ...WRITTEN_AS_BUILT, config, schema: schemas.listConversationsSchema },
    async (request) => {
      const { userId } = callerOf(request);
      const unreadOnly = request.query.unread_only === 'true';
      const binding = ['conversations', userId, String(unreadOnly)] as const;
      const page = ctx.cursors.page(request.query, binding);
      const { conversations, next } = await listConversations(ctx, userId, { unreadOnly, page });
      return { conversations, next_cursor: ctx.cursors.next(binding, next) };
    },
  );

  app.get('/api/chat/unread', { config, schema: schemas.unreadSchema }, async (request) =>
    unreadSummary(ctx, callerOf(request).userId),
  );

  app.get(
    '/api/chat/conversations/:id',
    { ...onConversation, schema: schemas.getConversationSchema },
    async (request) => ({ conversation: await getConversation(ctx, membershipOf(request)) }),
  );

  app.post(
    '/api/chat/conversations/:id/messages',
    { ...onConversation, schema: schemas.sendMessageSchema },
    async (request, reply) => {
      const sent = await sendMessage(ctx, membershipOf(request), request.body);
      if (sent.replayed) reply.header('idempotent-replayed', 'true');
      return reply
        .code(sent.replayed ? 200 : 201)
        .send({ message: 'Message sent' as const, chat_message: sent.message });
    },
  );

  app.get(
    '/api/chat/conversations/:id/messages',
    { ...onConversation, ...WRITTEN_AS_BUILT, schema: schemas.listMessagesSchema },
    async (request) => {
      const { before, after, limit } = request.query;
      return listMessages(ctx, membershipOf(request), {
        before: positionOr(before, undefined),
        after: positionOr(after, undefined),
        limit: numberOr(limit, schemas.MESSAGES_PAGE.default),
      });
    },
  );

  app.get(
    '/api/chat/conversations/:id/changes',
    { ...onConversation, ...WRITTEN_AS_BUILT, schema: schemas.listChangesSchema },
    async (request) =>
      listChanges(ctx, membershipOf(request), {
        sinceVersion: positionOr(request.query.since_version, 0),
        limit: numberOr(request.query.limit, schemas.CHANGES_PAGE.default),
      }),
  );

  app.post(
    '/api/chat/conversations/:id/read',
    { ...onConversation, schema: schemas.markReadSchema },
    async (request) => markRead(ctx, membershipOf(request), request.body.seq),
  );

  app.patch(
    '/api/chat/messages/:id',
    { ...onMessage, schema: schemas.editMessageSchema },
    async (request) => ({
      message: 'Message edited' as const,
      chat_message: await editMessage(ctx, messageAccessOf(request), request.body.text),
    }),
  );

  app.delete(
    '/api/chat/messages/:id',
    { ...onMessage, schema: schemas.deleteMessageSchema },
    async (request) => ({
      message: 'Message deleted' as const,
      chat_message: await deleteMessage(ctx, messageAccessOf(request)),
    }),
  );
};
