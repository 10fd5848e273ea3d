import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';

/**
 * The client's address: Fastify's `request.ip` (from X-Forwarded-For when TRUST_PROXY says so),
 * unless that header held something that is not an IP address, then the socket's address. What
 * we store, log and count limits by is always an address.
 */
export function clientIp(request: FastifyRequest): string {
  if (isIP(request.ip) !== 0) return request.ip;
  return request.socket.remoteAddress ?? 'unknown';
}
