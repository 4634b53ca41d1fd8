/**
 * A brokerage case (id `brokerage:<case_id>`, CONTRACT §10): the acquisition of a name for a
 * buyer, moved by operators through the `move` Update and by its own timers.
 *
 *   requested → researching → owner_contacted → negotiating → agreed (price) → payment_secured
 *   → transferring → completed;   agreed → negotiating;   anything before completed → closed.
 *
 * The Update's validator refuses every other move (and moves after a final status) with the
 * reason, before anything is written; the handler applies an allowed move through the
 * applyCaseMove activity (read model, timeline, event and, on completed, the money) with this
 * workflow's clock. Moves are applied one at a time, in the order they were accepted.
 *
 * Timers (workflow time, so tests skip it):
 *   - owner_contacted: follow-ups 3, 7 and 14 days after the owner was contacted while no move
 *     happens (each is a log line and a count on the case for the brokers or, self-serve, a
 *     reminder to the buyer);
 *   - agreed: if payment is not secured within 10 days, the case goes back to negotiating;
 *   - any open status: 30 days without a move closes the case ("no activity for 30 days").
 * BusinessStatus is the case's status.
 */
import { fastForwardable } from './fast-forward';
import { allHandlersFinished, ApplicationFailure, condition, proxyActivities, setHandler, setWorkflowOptions } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';
import {
  caseNotOpenedSignal,
  caseStateQuery,
  FINAL_CASE_STATUSES,
  MOVE_NOT_ALLOWED,
  moveProblem,
  moveUpdate,
  type BrokerageCaseInput,
  type BrokerageCaseResult,
  type CaseMove,
  type CaseState,
  type CaseStatus,
} from './brokerage-messages';
import { showBusinessStatus } from './business-status';

const DAY_MS = 24 * 60 * 60 * 1000;
export const FOLLOW_UP_AFTER_DAYS = [3, 7, 14] as const;
export const QUIET_CASE_CLOSES_AFTER_MS = 30 * DAY_MS;
export const PAYMENT_DEADLINE_MS = 10 * DAY_MS;

const cases = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function brokerageCaseWorkflow(input: BrokerageCaseInput): Promise<BrokerageCaseResult> {
  const { caseId, casePublicId, tier } = input;
  let status: CaseStatus = 'requested';
  let priceCents: number | null = null;
  let moves = 1; // `requested` was written by the API with the case
  let lastMoveAt = Date.now();
  let followUpsSent = 0;
  let applying = false;
  let notOpened = false;
  let absent = false;

  type Timer = NonNullable<CaseState['next_timer']>;
  const nextTimer = (): Timer | null => {
    if (FINAL_CASE_STATUSES.includes(status)) return null;
    const timers: Timer[] = [{ at: new Date(lastMoveAt + QUIET_CASE_CLOSES_AFTER_MS).toISOString(), action: 'close_quiet_case' }];
    if (status === 'agreed') timers.push({ at: new Date(lastMoveAt + PAYMENT_DEADLINE_MS).toISOString(), action: 'reopen_negotiation' });
    if (status === 'owner_contacted' && followUpsSent < FOLLOW_UP_AFTER_DAYS.length) {
      timers.push({ at: new Date(lastMoveAt + FOLLOW_UP_AFTER_DAYS[followUpsSent] * DAY_MS).toISOString(), action: 'follow_up' });
    }
    return timers.reduce((a, b) => (Date.parse(b.at) < Date.parse(a.at) ? b : a));
  };

  const state = (): CaseState => ({
    case_id: casePublicId,
    tier,
    status,
    price_cents: priceCents,
    moves,
    last_move_at: new Date(lastMoveAt).toISOString(),
    follow_ups_sent: followUpsSent,
    next_timer: nextTimer(),
  });

  /** Applies one move, after any move already being applied; re-checked because the status may have changed meanwhile. */
  const apply = async (move: CaseMove, by: 'operator' | 'timer'): Promise<void> => {
    await condition(() => !applying);
    const problem = absent ? `case ${casePublicId} does not exist` : moveProblem(casePublicId, status, move);
    if (problem) throw ApplicationFailure.nonRetryable(problem, MOVE_NOT_ALLOWED);
    applying = true;
    try {
      const at = new Date().toISOString();
      const applied = await cases.applyCaseMove({ caseId, seq: moves + 1, from: status, to: move.to, at, priceCents: move.price_cents ?? null, reason: move.reason ?? null, by });
      if (applied === 'absent') {
        absent = true;
        return;
      }
      moves++;
      status = applied.status;
      priceCents = applied.priceCents;
      lastMoveAt = Date.parse(at);
      if (status === 'owner_contacted') followUpsSent = 0;
      showBusinessStatus(status);
    } finally {
      applying = false;
    }
  };

  setHandler(caseStateQuery, state);
  setHandler(caseNotOpenedSignal, () => {
    notOpened = true;
  });
  setHandler(
    moveUpdate,
    async (move) => {
      await apply(move, 'operator');
      return state();
    },
    {
      validator: (move: CaseMove) => {
        if (notOpened || absent) throw ApplicationFailure.nonRetryable(`case ${casePublicId} does not exist`, MOVE_NOT_ALLOWED);
        const problem = moveProblem(casePublicId, status, move);
        if (problem) throw ApplicationFailure.nonRetryable(problem, MOVE_NOT_ALLOWED);
      },
    },
  );

  // Sandbox fast-forward fires the case's next timer now (a follow-up, the quiet close, the reopen).
  const fastForward = fastForwardable();
  showBusinessStatus(status);
  while (!FINAL_CASE_STATUSES.includes(status) && !notOpened && !absent) {
    const timer = nextTimer()!;
    const seen = moves;
    const woken = await fastForward.wait('brokerage_timer', () => moves !== seen || notOpened || absent, Math.max(1, Date.parse(timer.at) - Date.now()), `${timer.action} at ${timer.at}`);
    if (woken || applying) {
      fastForward.settled();
      continue;
    }
    if (timer.action === 'follow_up') {
      followUpsSent++;
      await cases.recordCaseFollowUp({ caseId, followUp: followUpsSent, at: new Date().toISOString() });
    } else {
      const move: CaseMove =
        timer.action === 'reopen_negotiation' ? { to: 'negotiating', reason: 'payment was not secured within 10 days of agreement' } : { to: 'closed', reason: 'no activity for 30 days' };
      try {
        await apply(move, 'timer');
      } catch (err) {
        // An operator's move got in first and the timer's move no longer applies: the loop re-plans.
        if (!(err instanceof ApplicationFailure && err.type === MOVE_NOT_ALLOWED)) throw err;
      }
    }
    fastForward.settled();
  }
  fastForward.settled();
  await condition(allHandlersFinished);
  if (notOpened) return { status: 'not_opened' };
  if (absent) return { status: 'absent' };
  return { status };
}

// Worker Versioning: runs long: it moves to the current worker version, patched() keeps it replaying (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('AUTO_UPGRADE'), brokerageCaseWorkflow);
