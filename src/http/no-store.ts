import type { FastifyInstance } from 'fastify';
import { isApiPath } from './authenticate.js';

/**
 * Every `/api` answer is one user's (tokens, profiles, messages): `Cache-Control: no-store`, so no
 * browser or proxy keeps it (RFC 6749 §5.1 asks it of token responses). A route that sets its own
 * caching keeps it.
 */
export function noStoreForApi(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply) => {
    if (isApiPath(request.url.split('?', 1)[0]) && !reply.hasHeader('cache-control'))
      reply.header('cache-control', 'no-store');
  });
}
