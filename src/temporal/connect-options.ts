/**
 * How the service reaches Temporal beyond its address: TLS, client certificates and an API key
 * come from Temporal's own environment configuration (`@temporalio/envconfig`: TEMPORAL_API_KEY,
 * TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH / _KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH,
 * TEMPORAL_GRPC_META_*, or a TOML profile through TEMPORAL_CONFIG_FILE and TEMPORAL_PROFILE), so
 * Temporal Cloud works by configuration alone. The address and namespace stay the service's
 * (src/config.ts: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE), the same variables envconfig reads.
 */
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';

export function temporalConnectionOptions(address: string, env: NodeJS.ProcessEnv = process.env): NativeConnectionOptions & { address: string } {
  const { connectionOptions } = loadClientConnectConfig({ profile: env.TEMPORAL_PROFILE || undefined, overrideEnvVars: env as Record<string, string> });
  return { ...connectionOptions, address };
}
