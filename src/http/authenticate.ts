import type { FastifyRequest } from 'fastify';
import type { Caller } from '../accounts/caller.js';
import { ApiError, Errors } from '../errors.js';
import { clientIp } from './client-ip.js';

/**
 * Who may call a route, declared in its route config (`config: { access: 'public' }`):
 * - `bearer`: a valid access token is required (also what a route that declares nothing gets);
 * - `optional`: no token is fine; a token that is sent must be valid;
 * - `public`: no token is looked at; the request counts against its IP's anonymous budget;
 * - `socket`: the route authenticates in-band and refuses with close codes (the chat WebSocket:
 *   API.md says its upgrade always succeeds, so neither a 401 nor a budget's 429 may answer it).
 */
export type RouteAccess = 'bearer' | 'optional' | 'public' | 'socket';

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  interface FastifyRequest {
    /** Set by the authentication hook when a valid bearer token came with the request. */
    caller?: Caller;
  }
}

interface Options {
  /** A token to its caller; throws `unauthorized` for a bad one. */
  readonly verify: (token: string) => Promise<Caller>;
  /** Counts a request made without a token against its client IP's budget (or throws 429). */
  readonly takeAnonymousRequest: (ip: string) => Promise<void>;
}

const BEARER = /^Bearer +([A-Za-z0-9\-_.]+) *$/i;

/** The token of an `Authorization: Bearer …` header, if it is one. */
export function bearerToken(header: string | undefined): string | undefined {
  return BEARER.exec(header ?? '')?.[1];
}

export function isApiPath(url: string | undefined): boolean {
  return url === '/api' || (url?.startsWith('/api/') ?? false);
}

/**
 * The one authentication hook, fail-closed: every `/api` route needs a valid bearer token unless
 * its config says `public` or `optional`. Requests without a token count against the per-IP budget
 * for unauthenticated requests.
 */
export function authenticate({ verify, takeAnonymousRequest }: Options) {
  return async function authenticateRequest(request: FastifyRequest): Promise<void> {
    if (request.is404 || !isApiPath(request.routeOptions.url)) return;
    const access = request.routeOptions.config.access ?? 'bearer';
    if (access === 'socket') return;
    const header = request.headers.authorization;
    if (access === 'public' || (access === 'optional' && header === undefined)) {
      await takeAnonymousRequest(clientIp(request));
      return;
    }
    const token = bearerToken(header);
    if (token === undefined) return refuse(request);
    try {
      request.caller = await verify(token);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return refuse(request, error);
      throw error;
    }
  };

  /**
   * A request without a valid token is an unauthenticated one, and counts as such (API.md): a flood
   * of forged tokens, each a signature check, meets the same 429 as a flood of anonymous calls.
   */
  async function refuse(request: FastifyRequest, error = Errors.unauthorized()): Promise<never> {
    await takeAnonymousRequest(clientIp(request));
    throw error;
  }
}

/** The caller of a `bearer` route (the hook has already answered 401 without one). */
export function callerOf(request: FastifyRequest): Caller {
  if (request.caller === undefined) throw Errors.unauthorized();
  return request.caller;
}
