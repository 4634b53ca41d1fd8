/** A partner's webhook endpoint per environment: registration, and what delivery needs of it. */
import { lookup } from 'node:dns/promises';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { ApiError } from '../api/errors';
import type { SecretBox } from '../auth/secret-box';
import { forbiddenAddress, secretProblem, urlProblems, type TargetPolicy } from './url-policy';

export interface EndpointView {
  url: string;
  enabled: boolean;
  updated_at: string;
}

/** What an endpoint's sealed secret is bound to (SecretBox's associated data). */
export const webhookSecretAad = (partnerId: string, environment: Environment) => `webhook:${partnerId}:${environment}`;
const aad = webhookSecretAad;

/** Resolves the URL's host and checks every address; returns the reasons it is refused. */
export async function resolvedAddressProblems(url: URL, policy: TargetPolicy): Promise<string[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return [`${host} does not resolve`];
  }
  return addresses.map((a) => forbiddenAddress(a, policy)).filter((why): why is string => !!why).map((why) => `${host} resolves to ${why}`);
}

/**
 * Registers or replaces the endpoint. Events recorded before registration are not pushed to a
 * new endpoint (they stay in /events); an endpoint replaced keeps its delivery position.
 */
export async function registerEndpoint(
  dataSource: DataSource,
  secretBox: SecretBox,
  input: { partnerId: string; environment: Environment; url: string; secret: string },
  options: { allowLoopback: boolean },
): Promise<EndpointView> {
  const policy: TargetPolicy = { environment: input.environment, allowLoopback: options.allowLoopback };
  const weak = secretProblem(input.secret, policy);
  if (weak) throw new ApiError('validation_error', `body.secret: ${weak}`, [{ field: 'body.secret', issue: weak }]);
  const problems = urlProblems(input.url, policy);
  if (!problems.length) problems.push(...(await resolvedAddressProblems(new URL(input.url), policy)));
  if (problems.length) {
    throw new ApiError('validation_error', `url ${problems.join('; ')}`, problems.map((issue) => ({ field: 'body.url', issue })));
  }
  const sealed = secretBox.seal(input.secret, aad(input.partnerId, input.environment));
  const [row] = (await dataSource.query(
    `INSERT INTO webhook_endpoints (partner_id, environment, url, secret_sealed, enabled, delivered_through_seq)
     VALUES ($1, $2, $3, $4, true, COALESCE((SELECT last_seq FROM event_counters WHERE partner_id = $1 AND environment = $2), 0))
     ON CONFLICT (partner_id, environment) DO UPDATE SET url = EXCLUDED.url, secret_sealed = EXCLUDED.secret_sealed, enabled = true, updated_at = now()
     RETURNING url, enabled, updated_at`,
    [input.partnerId, input.environment, input.url, sealed],
  )) as Array<{ url: string; enabled: boolean; updated_at: Date }>;
  return { url: row.url, enabled: row.enabled, updated_at: row.updated_at.toISOString() };
}

export interface DeliveryTarget {
  url: string;
  secret: string;
  deliveredThroughSeq: number;
}

export async function deliveryTarget(dataSource: DataSource, secretBox: SecretBox, partnerId: string, environment: Environment): Promise<DeliveryTarget | undefined> {
  const [row] = (await dataSource.query('SELECT url, secret_sealed, delivered_through_seq FROM webhook_endpoints WHERE partner_id = $1 AND environment = $2 AND enabled', [
    partnerId,
    environment,
  ])) as Array<{ url: string; secret_sealed: Buffer; delivered_through_seq: string }>;
  if (!row) return undefined;
  return { url: row.url, secret: secretBox.open(row.secret_sealed, aad(partnerId, environment)), deliveredThroughSeq: Number(row.delivered_through_seq) };
}
