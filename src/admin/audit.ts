/**
 * Which operator did each manual act (issue: operators see the service): every admin command that
 * changes something is recorded in `operator_actions` before it acts, with who ran it and what it
 * was given, and its outcome (succeeded, refused with the reason, failed) appended after it;
 * `admin audit` lists them. In production the operator must be named (ADMIN_OPERATOR): in a
 * container the OS user is always `node`.
 */
import os from 'node:os';
import { In, IsNull, type DataSource } from 'typeorm';
import { OperatorAction } from '../db/entities/operator-action';
import { dependencyUnavailable } from '../api/unavailable';

/** Commands that only read: not recorded. */
const READ_ONLY = new Set(['partner list', 'partner applications', 'credential list', 'webhooks list', 'webhooks deliveries', 'workflows patches', 'deploy status', 'disputes list', 'reconcile', 'audit']);

/** Who runs this command: ADMIN_OPERATOR, else the OS user (the one behind sudo when there is one). */
export function operatorName(env: NodeJS.ProcessEnv = process.env): string {
  return env.ADMIN_OPERATOR?.trim() || env.SUDO_USER || os.userInfo().username;
}

export function isRecorded(command: string, args: Record<string, unknown>): boolean {
  // `partner quota` with no new limit only shows them.
  if (command === 'partner quota') return args.activeQuotes !== undefined || args.openCases !== undefined;
  return !READ_ONLY.has(command);
}

/** A command recorded as started: what its outcome row repeats and points at. */
export interface Attempt {
  id: string;
  operator: string;
  command: string;
  arguments: Record<string, unknown>;
}

/** Text Postgres stores: no NUL (text and jsonb refuse it), no lone surrogate (jsonb refuses its escape). */
export function storable(text: string): string {
  return text.replaceAll('\0', '').replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** Records a command about to act (`started`). */
export async function recordAttempt(dataSource: DataSource, command: string, args: Record<string, unknown>, operatorGiven = operatorName()): Promise<Attempt> {
  const { json: _json, ...given } = args;
  const operator = storable(operatorGiven);
  const inserted = await dataSource.getRepository(OperatorAction).insert({ operator, command, arguments: given as object, outcome: 'started' });
  return { id: String(inserted.identifiers[0]!.id), operator, command, arguments: given };
}

/** gRPC codes of a breakdown, not of a refusal (the call may or may not have been acted on): CANCELLED, UNKNOWN, DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE. */
export const BREAKDOWN_GRPC_CODES = new Set([1, 2, 4, 13, 14]);
/** Errors of a part that did not answer or broke, by class name. */
const BREAKDOWN_NAMES = new Set(['ConnectionIsNotSetError', 'TimeoutError', 'AbortError', 'TransportError']);
/** SQLSTATE classes of a database that broke or went away (connection, rollback, resources, operator intervention, system, internal); the rest (22 data, 23 a rule such as a unique name) are refusals. */
const BREAKDOWN_SQLSTATES = /^(08|40|53|57|58|XX)/;

/**
 * How a command that threw ended: `failed` when a part broke or did not answer (the database or
 * Temporal out of reach, a gRPC breakdown, a service error of the 5xx kind), else `refused`: the
 * command stopped with a reason (bad input, a missing file it was given, a rule of the service).
 */
export function outcomeOf(err: unknown): 'refused' | 'failed' {
  // A file the operator named that is not there is their input, not a breakdown.
  const io = err as { code?: unknown; syscall?: unknown };
  if ((io?.code === 'ENOENT' || io?.code === 'EACCES' || io?.code === 'EISDIR') && (io.syscall === 'open' || io.syscall === 'scandir' || io.syscall === 'read')) return 'refused';
  if (dependencyUnavailable(err)) return 'failed';
  for (let e = err as { name?: string; code?: unknown; status?: unknown; message?: string; cause?: unknown; driverError?: { code?: unknown } } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.name === 'QueryFailedError') return typeof e.driverError?.code === 'string' && BREAKDOWN_SQLSTATES.test(e.driverError.code) ? 'failed' : 'refused';
    if (e.name === 'ApiError' && typeof e.status === 'number') return e.status >= 500 ? 'failed' : 'refused';
    if (typeof e.code === 'number' && BREAKDOWN_GRPC_CODES.has(e.code)) return 'failed';
    if (e.name && BREAKDOWN_NAMES.has(e.name)) return 'failed';
    // grpc-js's own words when Temporal never answered the connection.
    if (typeof e.message === 'string' && /^Failed to connect before the deadline/.test(e.message)) return 'failed';
  }
  return 'refused';
}

/** Appends the outcome of `attempt` (the started row is never changed). */
export async function recordOutcome(dataSource: DataSource, attempt: Attempt, outcome: 'succeeded' | 'refused' | 'failed', error?: string): Promise<void> {
  await dataSource
    .getRepository(OperatorAction)
    .insert({ operator: attempt.operator, command: attempt.command, arguments: attempt.arguments as object, outcome, attemptId: attempt.id, error: error === undefined ? null : storable(error.slice(0, 2000)) });
}

export interface ActionView {
  operator: string;
  command: string;
  arguments: Record<string, unknown>;
  at: string;
  /** succeeded, refused, failed; `unfinished` when its process ended before saying (killed, say). */
  outcome: 'succeeded' | 'refused' | 'failed' | 'unfinished';
  /** Why it was refused, or how it failed. */
  error: string | null;
}

/** The acts, newest first, each with its outcome (rows recorded before outcomes were: succeeded). */
export async function recentActions(dataSource: DataSource, limit: number): Promise<ActionView[]> {
  const repo = dataSource.getRepository(OperatorAction);
  const acts = await repo.find({ where: { attemptId: IsNull() }, order: { id: 'DESC' }, take: limit });
  const started = acts.filter((a) => a.outcome === 'started').map((a) => a.id);
  const outcomes = started.length ? await repo.find({ where: { attemptId: In(started) } }) : [];
  const outcomeOf = new Map(outcomes.map((o) => [String(o.attemptId), o]));
  return acts.map((a) => {
    const ended = a.outcome === 'started' ? outcomeOf.get(a.id) : a;
    return {
      operator: a.operator,
      command: a.command,
      arguments: a.arguments,
      at: a.at.toISOString(),
      outcome: ended ? (ended.outcome as ActionView['outcome']) : 'unfinished',
      error: ended?.error ?? null,
    };
  });
}
