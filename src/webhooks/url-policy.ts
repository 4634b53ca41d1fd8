/**
 * Where webhooks may be delivered. Live: https only, and only to a public unicast address
 * (ipaddr.js's `unicast` range): never a private, loopback, link-local (which includes cloud
 * metadata at 169.254.169.254), site-local (fec0::/10), unique-local, discard-only (100::/64),
 * carrier-grade NAT, multicast, reserved or unspecified address, nor any other special range. Sandbox: http or https, and the same classes are
 * forbidden; loopback only when the operator switched it on (WEBHOOK_ALLOW_LOOPBACK, which
 * `npm start` does so a developer can receive on the same machine), because on a shared server
 * loopback reaches the service's own ports. Checked when the endpoint is registered and again
 * for every address the name resolves to at delivery.
 */
import ipaddr from 'ipaddr.js';
import type { Environment } from '../config';

/** Live endpoints need a secret of at least this length; sandbox takes any non-empty one (the contract sets no minimum). */
export const MIN_LIVE_SECRET_LENGTH = 16;
export const MAX_SECRET_LENGTH = 256;
export const MAX_URL_LENGTH = 2048;


/** How a message names the common ranges (ipaddr.js names them in camel case); the rare ones by their ipaddr.js name. */
const RANGE_WORDS: Record<string, string> = {
  private: 'a private address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a unique-local address',
  carrierGradeNat: 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  ipv4Mapped: 'an IPv4-mapped address',
  benchmarking: 'a benchmarking address',
  deprecated: 'a deprecated address',
};

/** The credential's environment and the operator's loopback switch: together they decide what is refused. */
export interface TargetPolicy {
  environment: Environment;
  allowLoopback: boolean;
}

const loopbackAllowed = (policy: TargetPolicy) => policy.environment === 'sandbox' && policy.allowLoopback;

/**
 * Why an address may not receive webhooks under this policy (the kind of address, never the
 * address: an error about a resolved name must not tell a partner what an internal name resolves
 * to), or undefined when it may. An allow-list: only unicast, and loopback when allowed.
 */
export function forbiddenAddress(address: string, policy: TargetPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return 'not an IP address';
  const range = ipaddr.process(address).range(); // process() unwraps IPv4-mapped IPv6 (::ffff:10.0.0.1)
  if (range === 'unicast') return undefined;
  if (range === 'loopback') return loopbackAllowed(policy) ? undefined : 'a loopback address';
  return RANGE_WORDS[range] ?? `an address of the ${range} range`;
}

/** Why a secret is too weak for the environment (live asks for MIN_LIVE_SECRET_LENGTH), or undefined. */
export function secretProblem(secret: string, policy: Pick<TargetPolicy, 'environment'>): string | undefined {
  return policy.environment === 'live' && secret.length < MIN_LIVE_SECRET_LENGTH ? `at least ${MIN_LIVE_SECRET_LENGTH} characters for live` : undefined;
}

/** Checks the URL's form; returns the problems (empty when fine). Host names are resolved later. */
export function urlProblems(raw: string, policy: TargetPolicy): string[] {
  if (raw.length > MAX_URL_LENGTH) return [`at most ${MAX_URL_LENGTH} characters`];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return ['must be an absolute URL'];
  }
  const problems: string[] = [];
  if (url.protocol !== 'https:' && url.protocol !== 'http:') problems.push('must be http or https');
  else if (policy.environment === 'live' && url.protocol !== 'https:') problems.push('must be https for live credentials');
  if (url.username || url.password) problems.push('must not carry credentials');
  if (url.hash) problems.push('must not have a fragment');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(host)) {
    const why = forbiddenAddress(host, policy);
    // The partner wrote this address: naming it back tells nothing new.
    if (why) problems.push(`must not point at ${why} (${host})`);
  } else if (/^localhost$|\.localhost$/i.test(host) && !loopbackAllowed(policy)) {
    problems.push('must not point at localhost');
  } else if (/^(metadata|metadata\.google\.internal)$/i.test(host)) {
    problems.push('must not point at a metadata service');
  }
  return problems;
}
