/**
 * Whether an error means a part underneath (Postgres, Redis, the Temporal server) cannot be
 * reached right now, rather than a fault in this request: such a failure is answered 503
 * `service_unavailable` with `Retry-After` (the partner retries with the same Idempotency-Key),
 * never 500 (issue: nothing lost when any part dies). Every write the API makes is one
 * transaction, so a request that failed this way left no half-written record.
 */

/** Node's socket errors of a peer that is down or unreachable. */
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOENT', 'EAI_AGAIN']);

/**
 * Postgres SQLSTATEs of a server that is not serving: class 08 (connection exception),
 * admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections, and the
 * read-only state of a standby or a database mid-recovery.
 */
const UNAVAILABLE_SQLSTATES = /^(08...|57P01|57P02|57P03|53300|25006)$/;

/** What node-postgres and ioredis say when their connection is gone (they carry no code). */
const CONNECTION_MESSAGES = [
  /Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /Client has encountered a connection error/i,
  /Client was closed and is not queryable/i,
  /Connection is closed/i,
  /Stream isn't writeable/i,
  /the database system is (starting up|shutting down|in recovery mode)/i,
];

/** gRPC statuses of a Temporal frontend that is down or restarting: UNAVAILABLE (14), DEADLINE_EXCEEDED (4). */
const GRPC_UNAVAILABLE = new Set<number>([14, 4]);

export function dependencyUnavailable(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e && typeof e === 'object' && !seen.has(e); ) {
    seen.add(e);
    const x = e as { code?: unknown; errno?: unknown; message?: unknown; driverError?: unknown; cause?: unknown; name?: unknown };
    if (typeof x.code === 'string' && (CONNECTION_ERRNOS.has(x.code) || UNAVAILABLE_SQLSTATES.test(x.code))) return true;
    // TypeORM releases a transaction's query runner when its connection dies half-way (Postgres
    // killed or restarting); the transaction's next query then meets one of these. Postgres rolled
    // the transaction back with its connection: nothing was half-written (seen in a chaos run).
    if (x.name === 'QueryRunnerAlreadyReleasedError' || x.name === 'QueryRunnerProviderAlreadyReleasedError') return true;
    if (typeof x.code === 'number' && x.name !== 'QueryFailedError' && GRPC_UNAVAILABLE.has(x.code) && 'details' in x) return true;
    // The service's own configured namespace "not found": a Temporal frontend that is starting, or
    // whose namespace registry has not caught up after a restart, says so for a moment (seen in a
    // chaos run, 2026-12-02). It is never the request's fault.
    if (x.name === 'NamespaceNotFoundError') return true;
    if (typeof x.message === 'string' && CONNECTION_MESSAGES.some((m) => m.test(x.message as string))) return true;
    // TypeORM wraps the driver's error; Temporal's ServiceError and AggregateError carry a cause.
    e = x.driverError ?? x.cause ?? (Array.isArray((e as { errors?: unknown[] }).errors) ? (e as { errors: unknown[] }).errors[0] : undefined);
  }
  return false;
}
