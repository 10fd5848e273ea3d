import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

const IPV6_PREFIX_GROUPS = 4; // 4 × 16 bits: the /64

/**
 * What a per-IP limit counts by: an IPv4 address as it is, an IPv6 address by its /64. An ISP
 * hands one home line (one server, one VM) a whole /64, so counting single IPv6 addresses would give
 * one client 2^64 budgets. An IPv4-mapped IPv6 address (`::ffff:192.0.2.7`, what a dual-stack
 * socket reports for an IPv4 client) is that IPv4 address.
 *
 * Only limits use this: sessions and logs keep the full address.
 */
export function clientNetwork(ip: string): string {
  // `clientIp` found no address: all such requests share one budget.
  if (isIP(ip) === 0 || !ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip); // unmaps IPv4-mapped addresses
  if (address.kind() === 'ipv4') return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, IPV6_PREFIX_GROUPS);
  const network = new ipaddr.IPv6([...parts, 0, 0, 0, 0]); // also drops a zone (`%eth0`)
  return `${network.toRFC5952String()}/64`;
}
