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

/** An IPv4 address with a port, or a bracketed IPv6 address with or without one. */
const WITH_PORT = /^(?:(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}|\[([^\]]*)\](?::\d{1,5})?)$/;

/**
 * `text` as an IP address, without an IPv6 zone (`fe80::1%eth0`: it names an interface of the host
 * that saw the client, not the client) or a port (some proxies, Azure's among them, forward
 * `203.0.113.7:51234`: taken as no address, every client behind such a proxy would share the
 * proxy's per-IP limits), or undefined when it is none.
 */
function addressIn(text: string | undefined): string | undefined {
  const ported = text === undefined ? undefined : WITH_PORT.exec(text);
  const host = ported ? (ported[1] ?? ported[2]) : text;
  const address = host?.split('%', 1)[0];
  if (address === undefined || address.length > ADDRESS_MAX_LENGTH) return undefined;
  return isIP(address) === 0 ? undefined : address;
}
