import { BlockList, isIP } from 'node:net';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * The one loopback rule of ebsync (config, client, OAuth, and `ebsync sandbox` on the sandbox's
 * behalf): an IP literal in 127.0.0.0/8 or ::1 (any spelling, brackets allowed), or the name
 * `localhost`. Names under
 * `.localhost` are not: a resolver may send them anywhere, and the transport would then speak
 * plain HTTP with credentials to a host nobody checked.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost') return true;
  const family = isIP(host);
  if (family === 4) return LOOPBACK.check(host, 'ipv4');
  if (family === 6) return LOOPBACK.check(host, 'ipv6');
  return false;
}
