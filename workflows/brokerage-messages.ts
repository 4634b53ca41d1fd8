/**
 * Brokerage names shared by the case workflow, the API and the operators' commands (CONTRACT
 * §10): statuses, the moves the status order allows, the `move` Update and the `state` Query.
 * Imported by both sides, so it holds no I/O and nothing from src/.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/** Case statuses in their order; `completed` and `closed` are final. */
export const CASE_STATUSES = ['requested', 'researching', 'owner_contacted', 'negotiating', 'agreed', 'payment_secured', 'transferring', 'completed', 'closed'] as const;
export type CaseStatus = (typeof CASE_STATUSES)[number];
export const FINAL_CASE_STATUSES: readonly CaseStatus[] = ['completed', 'closed'];

export type CaseTier = 'managed' | 'self_serve';

/** Each status to the next one, `agreed` back to `negotiating`, and anything before `completed` to `closed`. */
export const ALLOWED_MOVES: Record<CaseStatus, readonly CaseStatus[]> = {
  requested: ['researching', 'closed'],
  researching: ['owner_contacted', 'closed'],
  owner_contacted: ['negotiating', 'closed'],
  negotiating: ['agreed', 'closed'],
  agreed: ['payment_secured', 'negotiating', 'closed'],
  payment_secured: ['transferring', 'closed'],
  transferring: ['completed', 'closed'],
  completed: [],
  closed: [],
};

export function isCaseStatus(value: unknown): value is CaseStatus {
  return typeof value === 'string' && (CASE_STATUSES as readonly string[]).includes(value);
}

/** What an operator asks for (Temporal UI "Send Update" takes this JSON as its argument). */
export interface CaseMove {
  to: CaseStatus;
  price_cents?: number;
  reason?: string;
}

/** Why a move cannot be made from `from`, or undefined when it can. Used by the Update's validator. */
export function moveProblem(caseId: string, from: CaseStatus, move: CaseMove | undefined): string | undefined {
  if (!move || typeof move !== 'object') return 'a move is { "to": "<status>", "price_cents"?: N, "reason"?: "…" }';
  if (!isCaseStatus(move.to)) return `"${String(move.to)}" is not a case status (${CASE_STATUSES.join(', ')})`;
  if (FINAL_CASE_STATUSES.includes(from)) return `case ${caseId} is ${from}: a ${from} case does not move any more`;
  if (!ALLOWED_MOVES[from].includes(move.to)) return `case ${caseId} cannot move from ${from} to ${move.to}: from ${from} it can move only to ${ALLOWED_MOVES[from].join(' or ')}`;
  if (move.to === 'agreed' && !(Number.isSafeInteger(move.price_cents) && (move.price_cents as number) > 0)) return 'a move to agreed needs the agreed price: a positive whole price_cents';
  if (move.price_cents !== undefined && move.to !== 'agreed') return 'price_cents goes only with a move to agreed';
  if (move.reason !== undefined && (typeof move.reason !== 'string' || move.reason.length > 500)) return 'reason must be text of at most 500 characters';
  return undefined;
}

/** The Update's failure type when its validator refuses a move (nothing changes). */
export const MOVE_NOT_ALLOWED = 'MoveNotAllowed';

export const caseWorkflowId = (casePublicId: string) => `brokerage:${casePublicId}`;

/** The live case, for operators (Temporal UI "Queries") and the admin command. */
export interface CaseState {
  case_id: string;
  tier: CaseTier;
  status: CaseStatus;
  price_cents: number | null;
  moves: number;
  last_move_at: string;
  follow_ups_sent: number;
  /** When the workflow will act by itself next, and how. */
  next_timer: { at: string; action: 'follow_up' | 'close_quiet_case' | 'reopen_negotiation' } | null;
}

export const moveUpdate = defineUpdate<CaseState, [CaseMove]>('move');
export const caseStateQuery = defineQuery<CaseState>('state');
/** The API lost the race for the name (another case holds it): this case was never recorded. */
export const caseNotOpenedSignal = defineSignal('caseNotOpened');

export interface BrokerageCaseInput {
  caseId: string;
  casePublicId: string;
  tier: CaseTier;
}

export interface BrokerageCaseResult {
  status: CaseStatus | 'not_opened' | 'absent';
}
