import type { FastifyInstance } from 'fastify';
import { isApiPath } from './authenticate.js';

/**
 * Every `/api` answer is one user's (tokens, profiles, messages): `Cache-Control: no-store`, so no
 * browser or proxy keeps it (RFC 6749 §5.1 asks it of token responses). A route that sets its own
 * caching keeps it. Judged by the route that answered, not the raw URL: the router decodes
 * percent-escapes, so `/%61pi/login` is `/api/login` too.
 */
export function noStoreForApi(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply) => {
    const path = request.routeOptions.url ?? request.url.split('?', 1)[0];
    if (isApiPath(path) && !reply.hasHeader('cache-control'))
      reply.header('cache-control', 'no-store');
  });
}
