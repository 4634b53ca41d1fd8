/** The timers after a sale: a checkout session's 7 days and its sale's 30-day refund window, a referred sale's. */
import { CheckoutSession } from '../src/db/entities/checkout-session';
import { expireSession } from '../src/checkout/sessions';
import { makeCommissionPayable, serviceRefundWindow } from '../src/finance/sales';
import { accrueCommission } from '../src/referral/commissions';
import type { ActivityDeps } from './deps';

export function createSaleWindowActivities(deps: ActivityDeps) {
  return {
    /** The checkout session's 7 days are over: an open session expires. */
    async expireCheckoutSession(input: { sessionPublicId: string }): Promise<'expired' | 'complete' | 'absent'> {
      return expireSession(deps.dataSource, input.sessionPublicId);
    },

    /** The order a paid session recorded and how long ago it was paid (the database's clock); null when it was not paid. */
    async checkoutSaleOf(input: { sessionPublicId: string }): Promise<{ orderId: string; paidAgoMs: number } | null> {
      const session = await deps.dataSource.getRepository(CheckoutSession).findOneBy({ publicId: input.sessionPublicId });
      if (!session?.orderId) return null;
      return { orderId: session.orderId, paidAgoMs: (await serviceRefundWindow(deps.dataSource.manager, session.orderId)).paidAgoMs };
    },

    /** A hosted-checkout sale's refund window passed: its commission becomes payable (or the sale was undone). */
    async makeServiceCommissionPayable(input: { orderId: string; at: string }): Promise<'payable' | 'reversed' | 'not_booked' | 'never'> {
      return makeCommissionPayable(deps.dataSource, input.orderId, new Date(input.at));
    },

    /** A referred sale's refund window passed: accrue its commission (or find it reversed). */
    async accrueReferralCommission(input: { salePublicId: string; at: string }): Promise<'accrued' | 'reversed' | 'absent'> {
      return accrueCommission(deps.dataSource, input.salePublicId, new Date(input.at));
    },
  };
}
