import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clientIp } from './client-ip.js';

/**
 * What a request's log line says about it (with its outcome, once answered): never its query
 * string, headers or body.
 */
function requestSummary(request: FastifyRequest, reply?: FastifyReply) {
  return {
    method: request.method,
    route: request.routeOptions.url,
    url: request.url.split('?')[0],
    status: reply?.statusCode,
    ms: reply && Math.round(reply.elapsedTime * 10) / 10,
    ip: clientIp(request),
  };
}

/**
 * One `request completed` line per request at info (Fastify's own two are turned off), or one
 * `request aborted by the client` line when the client hung up first: whenever that happens (in a
 * hook, while the body is read), never at error level, since anyone can cause it at will.
 */
export function logRequests(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    request.log.debug(
      { method: request.method, url: request.url.split('?')[0] },
      'request received',
    );
  });
  app.addHook('onRequestAbort', async (request) => {
    request.log.info(requestSummary(request), 'request aborted by the client');
  });
  app.addHook('onResponse', async (request, reply) => logCompleted(request, reply));
}

/** The `request completed` line (also for requests Fastify refuses before routing). */
export function logCompleted(request: FastifyRequest, reply: FastifyReply): void {
  request.log.info(requestSummary(request, reply), 'request completed');
}
