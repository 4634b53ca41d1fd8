/**
 * A hosted checkout session (id `checkout:<session_id>`, spec: "expires 7 days after creation").
 * Holds the 7-day timer: if nobody has paid by then, the session expires and its link shows an
 * expired page. Paying ends the wait early with the checkoutPaid signal; without the signal the
 * expiry step finds the session complete and leaves it alone, so the session's row lock, not the
 * signal, decides a payment racing the last second. BusinessStatus: open, complete or expired.
 */
import { condition, proxyActivities, setHandler, setWorkflowOptions } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';
import { checkoutPaidSignal, type CheckoutSessionInput } from './messages';
import { showBusinessStatus } from './business-status';

export const CHECKOUT_SESSION_LIFETIME = '7 days';

const { expireCheckoutSession } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function checkoutSessionWorkflow(input: CheckoutSessionInput): Promise<'complete' | 'expired' | 'absent'> {
  let paid = false;
  setHandler(checkoutPaidSignal, () => {
    paid = true;
  });
  showBusinessStatus('open');
  if (await condition(() => paid, CHECKOUT_SESSION_LIFETIME, { summary: 'the 7-day session' })) {
    showBusinessStatus('complete');
    return 'complete';
  }
  const outcome = await expireCheckoutSession({ sessionPublicId: input.sessionPublicId });
  showBusinessStatus(outcome);
  return outcome;
}

// Worker Versioning: ends within days: it stays on the worker version that started it (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('PINNED'), checkoutSessionWorkflow);
