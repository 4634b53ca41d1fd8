/** The month close's and payout runs' I/O. */
import type { Environment } from '../src/config';
import { closeSettlements } from '../src/finance/settlements';
import { runPayouts } from '../src/finance/payouts';
import type { PayoutSummary } from '../workflows/messages';
import type { ActivityDeps } from './deps';
import { heartbeatOrStop } from './heartbeat';

export function createFinanceActivities(deps: ActivityDeps) {
  return {
    /** Closes every open settlement of a month before `before` (YYYY-MM-01); returns how many. */
    async closeSettlements(input: { before: string }): Promise<number> {
      return closeSettlements(deps.dataSource, input.before, heartbeatOrStop);
    },

    /** Pays out what is payable in the environment; a retry pays nothing twice (one payout line per posting). */
    async runPayouts(input: { environment: Environment; at: string }): Promise<PayoutSummary[]> {
      return runPayouts(deps.dataSource, input.environment, new Date(input.at), heartbeatOrStop);
    },
  };
}
