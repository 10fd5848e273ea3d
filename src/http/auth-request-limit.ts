import type { FastifyRequest } from 'fastify';
import type { Limits } from '../limits/policies.js';
import { clientIp } from './client-ip.js';

/** onRequest hook for the Auth group's unauthenticated endpoints: 300 requests a minute per IP. */
export function authRequestLimit(limits: Limits) {
  return async function limitAuthRequests(request: FastifyRequest): Promise<void> {
    await limits.takeAuthRequest(clientIp(request));
  };
}
