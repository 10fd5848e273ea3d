import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** How long a browser may reuse a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE_S = 600;

const EXPOSED_HEADERS = ['Retry-After', 'WWW-Authenticate', 'Idempotent-Replayed', 'X-Request-Id'];

type Origins = '*' | readonly string[];

/**
 * Lets pages of `origins` call the API from a browser (CORS). Tokens travel in the
 * `Authorization` header, never in cookies, so no credentials are allowed; a page reads
 * `Retry-After` and `WWW-Authenticate` from a refusal, `Idempotent-Replayed` from a replayed
 * send, and `X-Request-Id` from any answer. A preflight is answered before authentication (it
 * carries no token) and counts against no budget; an `OPTIONS` that is no preflight (no `Origin`
 * and `Access-Control-Request-Method`, the Fetch standard's test) goes on to the routes, a JSON
 * 404 or 405 like any unknown method. Registered only when origins are configured: by default the
 * service answers no cross-origin page. Its hook goes first, so that refusals made in other
 * hooks (a draining instance's 503) are readable by the page too.
 */
export async function crossOriginRequests(app: FastifyInstance, origins: Origins): Promise<void> {
  if (origins !== '*' && origins.length === 0) return;
  const common: FastifyCorsOptions = {
    origin: origins === '*' ? '*' : [...origins],
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type'],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_S,
  };
  const preflight = { ...common, preflight: true };
  const other = { ...common, preflight: false };
  await app.register(cors, {
    delegator: (request, callback) => callback(null, isPreflight(request) ? preflight : other),
  });
}

const isPreflight = (request: FastifyRequest): boolean =>
  request.method === 'OPTIONS' &&
  request.headers.origin !== undefined &&
  request.headers['access-control-request-method'] !== undefined;

/**
 * The CORS headers the plugin gives an answer, for the answers its hook never sees: a request
 * Fastify refuses before routing (app.ts `frameworkErrors`, a URL that is no valid
 * percent-encoding), so that a page reads that 400 as it reads any other.
 */
export function crossOriginRefusalHeaders(
  origins: Origins,
): (request: FastifyRequest, reply: FastifyReply) => void {
  const exposed = EXPOSED_HEADERS.join(', ');
  const allowed = origins === '*' ? undefined : new Set(origins);
  return function setCrossOriginHeaders(request, reply) {
    if (allowed?.size === 0) return;
    reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (allowed === undefined) reply.header('access-control-allow-origin', '*');
    else if (origin !== undefined && allowed.has(origin))
      reply.header('access-control-allow-origin', origin);
    reply.header('access-control-expose-headers', exposed);
  };
}
