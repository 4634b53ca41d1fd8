/**
 * The client an address stands for, one key for every limit and count kept per client: the
 * public pages' limits (src/pages/limits.ts) and the referral visitor's hash
 * (src/referral/attribution.ts).
 */
import ipaddr from 'ipaddr.js';

/**
 * Whom an address stands for: an IPv4 address itself; an IPv6 address by its /64 (one host is
 * given a whole /64, so counting single addresses would let it rotate past every limit); an
 * IPv4-mapped IPv6 address as the IPv4 address it maps.
 */
export function clientKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  // process(): an IPv4-mapped IPv6 address, in any notation, becomes the IPv4 address it maps.
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
}
