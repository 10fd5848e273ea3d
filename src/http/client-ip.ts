import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';

/** The longest address in text: an IPv6 address with an IPv4 tail, 45 characters. */
const ADDRESS_MAX_LENGTH = 45;

/**
 * The client's address: Fastify's `request.ip` (from X-Forwarded-For when TRUST_PROXY says so),
 * unless that header held something that is not an IP address, then the socket's address. What
 * we store, log and count limits by is always an address, at most 45 characters.
 */
export function clientIp(request: FastifyRequest): string {
  return addressIn(request.ip) ?? addressIn(request.socket.remoteAddress) ?? 'unknown';
}

/**
 * `text` as an IP address, without an IPv6 zone (`fe80::1%eth0`: it names an interface of the host
 * that saw the client, not the client), or undefined when it is none.
 */
function addressIn(text: string | undefined): string | undefined {
  const address = text?.split('%', 1)[0];
  if (address === undefined || address.length > ADDRESS_MAX_LENGTH) return undefined;
  return isIP(address) === 0 ? undefined : address;
}
