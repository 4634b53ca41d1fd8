/** The timers after a sale: a checkout session's 7 days, a referred sale's 30-day refund window. */
import { expireSession } from '../src/checkout/sessions';
import { accrueCommission } from '../src/referral/commissions';
import type { ActivityDeps } from './deps';

export function createSaleWindowActivities(deps: ActivityDeps) {
  return {
    /** The checkout session's 7 days are over: an open session expires. */
    async expireCheckoutSession(input: { sessionPublicId: string }): Promise<'expired' | 'complete' | 'absent'> {
      return expireSession(deps.dataSource, input.sessionPublicId);
    },

    /** A referred sale's refund window passed: accrue its commission (or find it reversed). */
    async accrueReferralCommission(input: { salePublicId: string; at: string }): Promise<'accrued' | 'reversed' | 'absent'> {
      return accrueCommission(deps.dataSource, input.salePublicId, new Date(input.at));
    },
  };
}
