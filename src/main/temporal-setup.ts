/**
 * The Temporal setup job (docker-compose's `temporal-setup`, after `temporal-schema` has set up
 * the schema with admin-tools): the service's namespace with at least 30 days' retention (a
 * month's closed runs stay readable after the month ends), and the search attributes from the
 * code's own list (workflows/search-attributes.ts), the ones missing only. Safe to run again; it
 * waits up to two minutes for the frontend. On Temporal Cloud, namespaces and search attributes
 * are made in Cloud itself and this job is not run.
 */
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { loadConfig } from '../config';
import { temporalConnectionOptions } from '../temporal/connect-options';
import { INDEXED_VALUE_TYPE } from '../temporal/search-attributes';

export const RETENTION_DAYS = 30;

const NOT_FOUND = 5;

async function connect(address: string): Promise<Connection> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      const connection = await Connection.connect({ ...temporalConnectionOptions(address), connectTimeout: 5_000 });
      await connection.workflowService.getSystemInfo({});
      return connection;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      process.stderr.write(`temporal-setup: waiting for ${address} (${(err as Error).message})\n`);
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }
}

/** Retries a call that finds the namespace not there yet, for up to 30 s. */
async function untilFound<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if ((err as { code?: number }).code !== NOT_FOUND || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export async function setUpNamespace(connection: Connection, namespace: string, log: (m: string) => void): Promise<void> {
  const retention = msToTs(`${RETENTION_DAYS} days`);
  const retentionSeconds = RETENTION_DAYS * 86_400;
  let current: number | undefined;
  try {
    const described = await connection.workflowService.describeNamespace({ namespace });
    current = Number(described.config?.workflowExecutionRetentionTtl?.seconds ?? 0);
  } catch (err) {
    if ((err as { code?: number }).code !== NOT_FOUND) throw err;
  }
  if (current === undefined) {
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: retention });
    log(`namespace ${namespace} registered, retention ${RETENTION_DAYS} days`);
  } else if (current < retentionSeconds) {
    await connection.workflowService.updateNamespace({ namespace, config: { workflowExecutionRetentionTtl: retention } });
    log(`namespace ${namespace}: retention raised from ${current / 86_400} to ${RETENTION_DAYS} days`);
  } else {
    log(`namespace ${namespace}: retention ${current / 86_400} days`);
  }
  // A namespace just registered reaches every part of the server a moment later.
  const { customAttributes } = await untilFound(() => connection.operatorService.listSearchAttributes({ namespace }));
  const missing: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const key of ALL_SEARCH_ATTRIBUTES) if (!customAttributes?.[key.name]) missing[key.name] = INDEXED_VALUE_TYPE[key.type];
  if (Object.keys(missing).length) await untilFound(() => connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing }));
  log(`search attributes: ${ALL_SEARCH_ATTRIBUTES.map((k) => k.name).join(', ')} (${Object.keys(missing).length} added)`);
}

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.temporal.address) throw new Error('TEMPORAL_ADDRESS is required');
  const connection = await connect(config.temporal.address);
  try {
    await setUpNamespace(connection, config.temporal.namespace, (m) => process.stdout.write(`temporal-setup: ${m}\n`));
  } finally {
    await connection.close();
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`temporal-setup: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
