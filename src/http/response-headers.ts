import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isApiPath } from './authenticate.js';

/**
 * The headers every answer gets, in one hook:
 * - `X-Content-Type-Options: nosniff`: its `Content-Type` is the only reading a browser may make of
 *   it. Answers echo what users wrote (chat messages, bios, names), which a browser sniffing
 *   content could otherwise take for HTML or script.
 * - on every `/api` answer, `Cache-Control: no-store`: each is one user's (tokens, profiles,
 *   messages), so no browser or proxy keeps it (RFC 6749 §5.1 asks it of token responses). A route
 *   that sets its own caching keeps it. Judged by the route that answered, not the raw URL: the
 *   router decodes percent-escapes, so `/%61pi/login` is `/api/login` too.
 * - `X-Request-Id`: the id of the answer's log line (`reqId`), for a user or client to quote.
 */
export function responseHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply) => setResponseHeaders(request, reply));
}

/** The same, for an answer no hook sees (app.ts `frameworkErrors`: refused before routing). */
export function setResponseHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-content-type-options', 'nosniff');
  reply.header('x-request-id', request.id);
  const path = request.routeOptions.url ?? request.url.split('?', 1)[0];
  if (isApiPath(path) && !reply.hasHeader('cache-control'))
    reply.header('cache-control', 'no-store');
}

/** The same headers, for answers written straight to the socket (protocol-errors.ts). */
export const RAW_ANSWER_HEADERS = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
} as const;
