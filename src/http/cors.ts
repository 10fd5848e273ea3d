import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/** How long a browser may reuse a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE_S = 600;

/**
 * Lets pages of `origins` call the API from a browser (CORS). Tokens travel in the
 * `Authorization` header, never in cookies, so no credentials are allowed; a page reads
 * `Retry-After` and `WWW-Authenticate` from a refusal, and `X-Request-Id` from any answer. A preflight is answered before
 * authentication (it carries no token) and counts against no budget. Registered only when origins
 * are configured: by default the service answers no cross-origin page.
 */
export async function crossOriginRequests(
  app: FastifyInstance,
  origins: '*' | readonly string[],
): Promise<void> {
  if (origins !== '*' && origins.length === 0) return;
  await app.register(cors, {
    origin: origins === '*' ? '*' : [...origins],
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type'],
    exposedHeaders: ['Retry-After', 'WWW-Authenticate', 'X-Request-Id'],
    maxAge: PREFLIGHT_MAX_AGE_S,
    // An OPTIONS request that is no preflight goes on to the routes (a JSON 404), not a text 400.
    strictPreflight: false,
  });
}
