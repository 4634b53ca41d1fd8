/**
 * Where webhooks may be delivered. Live: https only, and never to a private, loopback,
 * link-local (which includes cloud metadata at 169.254.169.254), unique-local, carrier-grade NAT,
 * multicast, reserved or unspecified address. Sandbox: http or https, and the same classes are
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

const ALWAYS_FORBIDDEN = new Set(['private', 'linkLocal', 'uniqueLocal', 'carrierGradeNat', 'multicast', 'reserved', 'unspecified', 'broadcast', 'ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo', 'benchmarking', 'amt', 'as112', 'as112v6', 'orchid2', 'droneRemoteIdProtocolEntityTags', 'deprecated']);

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

/** Why an address may not receive webhooks under this policy, or undefined when it may. */
export function forbiddenAddress(address: string, policy: TargetPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  const parsed = ipaddr.process(address); // unwraps IPv4-mapped IPv6 (::ffff:10.0.0.1)
  const range = parsed.range();
  if (range === 'loopback') return loopbackAllowed(policy) ? undefined : `a loopback address (${address})`;
  if (ALWAYS_FORBIDDEN.has(range)) return `${RANGE_WORDS[range] ?? `an address of the ${range} range`} (${address})`;
  return undefined;
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
    if (why) problems.push(`must not point at ${why}`);
  } else if (/^localhost$|\.localhost$/i.test(host) && !loopbackAllowed(policy)) {
    problems.push('must not point at localhost');
  } else if (/^(metadata|metadata\.google\.internal)$/i.test(host)) {
    problems.push('must not point at a metadata service');
  }
  return problems;
}
