/** The brokerage case workflow's I/O: applying moves to the read model and following up owners. */
import { log } from '@temporalio/activity';
import type { DataSource } from 'typeorm';
import { applyCaseMove, recordFollowUp, type CaseMoveInput } from '../src/brokerage/moves';
import type { Starters } from '../src/temporal/starters';
import type { CaseStatus } from '../workflows/brokerage-messages';

export function createBrokerageActivities(deps: { dataSource: DataSource; starters?: Starters }) {
  return {
    /** Writes the move (once, whatever the retries) and wakes the partner's webhooks; 'absent' if the case was never recorded. */
    async applyCaseMove(input: CaseMoveInput): Promise<{ status: CaseStatus; priceCents: number | null } | 'absent'> {
      const result = await applyCaseMove(deps.dataSource, input);
      if (result === 'absent') return 'absent';
      await deps.starters?.eventsAppended(result.event.partnerId, result.event.environment);
      // The buyer's email of this move: its start is idempotent, and the sweep starts one missed here.
      if (result.emailKey) await deps.starters?.emailsOf([result.emailKey]);
      return { status: result.status, priceCents: result.priceCents };
    },

    /**
     * The owner has not answered: a follow-up is due. Brokers (managed) or the buyer (self-serve)
     * act on it; the log line is what their queue watches (`brokerage_follow_up_due`).
     */
    async recordCaseFollowUp(input: { caseId: string; followUp: number; at: string }): Promise<void> {
      const c = await recordFollowUp(deps.dataSource, input.caseId, input.followUp);
      if (!c) return;
      log.info('brokerage_follow_up_due: the owner has not answered', {
        case_id: c.publicId,
        domain: c.domain,
        tier: c.tier,
        follow_up: input.followUp,
        who: c.tier === 'managed' ? "the service's brokers contact the owner again" : 'the buyer is reminded to contact the owner again',
        at: input.at,
      });
    },
  };
}
