import fastifyWebsocket from '@fastify/websocket';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { Errors } from '../../errors.js';
import { bearerToken } from '../../http/authenticate.js';
import { clientIp } from '../../http/client-ip.js';
import { clientNetwork } from '../../limits/client-network.js';
import { MAX_FRAME_BYTES } from './socket-limits.js';
import type { ChatGateway } from './gateway.js';

/**
 * Fastify's WebSocket support on the API's own server, for every route (a WebSocket upgrade to
 * another path is refused rather than left hanging). Call on the root instance before any route.
 */
export async function registerWebSockets(
  app: FastifyInstance,
  gateway: ChatGateway,
): Promise<ChatGateway> {
  await app.register(fastifyWebsocket, {
    options: {
      maxPayload: MAX_FRAME_BYTES, // a bigger frame closes the socket with 1009
      perMessageDeflate: false, // zlib contexts per socket would cost far more than they save
      clientTracking: false, // the gateway's registry tracks them
    },
    // Stop listening first, so a client told 1001 reconnects to another instance, not this one.
    // Fastify's own close of the server, next, still waits for in-flight requests to finish.
    preClose: async () => {
      if (app.server.listening) app.server.close();
      await gateway.shutdown();
    },
    errorHandler(error, socket, request) {
      // Broken frames and dropped connections are the client's; ws closes those sockets itself.
      const fromClient = typeof (error as { code?: unknown }).code === 'string';
      if (fromClient) return request.log.debug({ err: error }, 'chat socket: client error');
      request.log.error({ err: error }, 'chat socket: handler failed');
      socket.terminate();
    },
  });
  // An upgrade to a route that takes no socket is refused with an HTTP answer once the route's own
  // checks (authentication first) have passed, before its handler: @fastify/websocket would accept
  // it, close it, and log its whole URL at info, a token a client put in the query string included
  // (API.md: never a token in the URL).
  app.addHook('preHandler', async (request) => {
    if (request.ws && request.routeOptions.config.access !== 'socket') throw Errors.notFound();
  });
  return gateway;
}

/** GET /api/chat/ws: the chat socket (API.md, "Real time"). */
export async function chatSocketRoutes(
  app: FastifyInstance,
  { gateway }: { gateway: ChatGateway },
) {
  app.route({
    method: 'GET',
    url: '/api/chat/ws',
    // Authentication happens in the socket, with close codes as its refusals.
    config: { access: 'socket' },
    // Not an HTTP operation: the socket's contract is API.md's "Real time" and the README.
    schema: { hide: true },
    handler: async () => {
      throw Errors.upgradeRequired();
    },
    preHandler: async (request, reply) => {
      if (request.ws) releaseUpgradeResponse(request, reply);
    },
    wsHandler: (socket, request) => {
      releaseUpgradeRequest(socket);
      const header = request.headers.authorization;
      // A header that is not a bearer token is a bad token (4401), not a missing one.
      const token = header === undefined ? undefined : (bearerToken(header) ?? '');
      // Counted by network, as every per-IP limit is: an IPv6 client holds a whole /64.
      gateway.accept(socket, token, clientNetwork(clientIp(request)));
    },
  });
}

/*
 * @fastify/websocket routes an upgrade through Fastify with an HTTP response made for it, and both
 * would stay reachable from the socket for its whole life: the response as the TCP socket's
 * current message, and the request and reply through the error listener it puts on the WebSocket.
 * That is about 3 KiB a socket (the headers, the bearer token among them, the reply, a child
 * logger), a third of what a socket costs, for nothing once the socket is ours. Let go of both.
 */

/** Before the upgrade: the TCP socket no longer points at the upgrade's HTTP response. */
function releaseUpgradeResponse(request: FastifyRequest, reply: FastifyReply): void {
  if (reply.raw.socket === request.raw.socket) reply.raw.detachSocket(request.raw.socket);
}

/**
 * After it: the WebSocket drops @fastify/websocket's error listener (a closure over the request
 * and reply). Errors on an open socket are the client's broken frames, which ws answers by closing
 * the socket itself; ChatSocket's own listener counts them (`frame_too_big`, `protocol_error`).
 */
function releaseUpgradeRequest(socket: WebSocket): void {
  for (const listener of socket.listeners('error')) {
    socket.off('error', listener as (...args: unknown[]) => void);
  }
}
