/**
 * Which operator did each manual act (issue: operators see the service): every admin command that
 * changes something is recorded in `operator_actions` once it succeeded, with who ran it and what
 * it was given; `admin audit` lists them.
 */
import os from 'node:os';
import type { DataSource } from 'typeorm';
import { OperatorAction } from '../db/entities/operator-action';

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

export async function recordAction(dataSource: DataSource, command: string, args: Record<string, unknown>, operator = operatorName()): Promise<void> {
  const { json: _json, ...given } = args;
  await dataSource.getRepository(OperatorAction).insert({ operator, command, arguments: given as object });
}

export interface ActionView {
  operator: string;
  command: string;
  arguments: Record<string, unknown>;
  at: string;
}

export async function recentActions(dataSource: DataSource, limit: number): Promise<ActionView[]> {
  const rows = await dataSource.getRepository(OperatorAction).find({ order: { id: 'DESC' }, take: limit });
  return rows.map((r) => ({ operator: r.operator, command: r.command, arguments: r.arguments, at: r.at.toISOString() }));
}
