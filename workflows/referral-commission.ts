/**
 * A referred sale's commission (id `referral:<sale_id>`): pending for the sale's 30-day refund
 * window (from payment), then accrued into the partner's payable balance, unless the sale was
 * refunded meanwhile (the refund voided it) or its transfer failed. BusinessStatus: pending,
 * then accrued or reversed.
 */
import { proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';
import type { ReferralCommissionInput } from './messages';
import { showBusinessStatus } from './business-status';
import { fastForwardable } from './fast-forward';

export const REFERRAL_REFUND_WINDOW = '30 days';

const { accrueReferralCommission } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function referralCommissionWorkflow(input: ReferralCommissionInput): Promise<'accrued' | 'reversed' | 'absent'> {
  // Sandbox fast-forward ends the 30 days now (CONTRACT §14): the commission accrues at once.
  const fastForward = fastForwardable();
  showBusinessStatus('pending');
  await fastForward.wait('referral_window', () => false, REFERRAL_REFUND_WINDOW, 'the 30-day refund window');
  const outcome = await accrueReferralCommission({ salePublicId: input.salePublicId, at: new Date().toISOString() });
  showBusinessStatus(outcome);
  await fastForward.finish();
  return outcome;
}

// Worker Versioning: ends within days: it stays on the worker version that started it (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('PINNED'), referralCommissionWorkflow);
