/**
 * A hosted checkout session (id `checkout:<session_id>`, spec: "expires 7 days after creation").
 * Holds the 7-day timer: if nobody has paid by then, the session expires and its link shows an
 * expired page. Paying ends the wait early with the checkoutPaid signal; without the signal the
 * expiry step finds the session complete and leaves it alone, so the session's row lock, not the
 * signal, decides a payment racing the last second.
 *
 * A paid session then holds its sale's 30-day refund window (CONTRACT §8, §11): when it passes,
 * the partner's commission becomes payable (a refund asked later is refused), unless the sale was
 * undone meanwhile. BusinessStatus: open, refund_window, complete or expired.
 */
import { patched, proxyActivities, setHandler, setWorkflowOptions, sleep } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';
import { checkoutPaidSignal, SERVICE_REFUND_WINDOW_MS, type CheckoutSessionInput } from './messages';
import { showBusinessStatus } from './business-status';
import { PATCHES } from './patches';
import { fastForwardable } from './fast-forward';

export const CHECKOUT_SESSION_LIFETIME = '7 days';

const { expireCheckoutSession, checkoutSaleOf, makeServiceCommissionPayable } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function checkoutSessionWorkflow(input: CheckoutSessionInput): Promise<'complete' | 'expired' | 'absent'> {
  let paid = false;
  let paidAt = 0;
  setHandler(checkoutPaidSignal, () => {
    paid = true;
    paidAt ||= Date.now();
  });
  // Sandbox fast-forward ends the 7 days now (CONTRACT §14).
  const fastForward = fastForwardable();
  showBusinessStatus('open');
  let outcome: 'complete' | 'expired' | 'absent';
  // A "Buy now" session's workflow starts at its first submit: its timer runs the time the session
  // had left then by the database's clock (runs started before that was sent: until expiresAt on
  // this workflow's clock).
  const lifetime =
    typeof input.lifetimeMs === 'number' ? Math.max(1, input.lifetimeMs) : input.expiresAt ? Math.max(1, Date.parse(input.expiresAt) - Date.now()) : CHECKOUT_SESSION_LIFETIME;
  if (await fastForward.wait('session_expiry', () => paid, lifetime, 'the 7-day session')) {
    outcome = 'complete';
  } else {
    outcome = await expireCheckoutSession({ sessionPublicId: input.sessionPublicId });
  }
  showBusinessStatus(outcome);
  fastForward.settled();
  // Runs started before this patch end here, as they did.
  if (outcome === 'complete' && patched(PATCHES.checkoutCommissionWindow.patchId)) await refundWindow(input.sessionPublicId, paidAt || Date.now());
  await fastForward.finish();
  return outcome;
}

/**
 * The sale's 30-day refund window, counted from the payment's recorded time: how long ago the
 * database says it was paid, when this workflow learns of it (its paid signal, delivered until it
 * arrives, or its 7 days' end), so a late or lost signal never moves the window's end (runs
 * recorded before that was answered: from when the signal came). Then its commission becomes
 * payable. A sale whose transfer is still under way then is made payable when it is booked
 * (src/finance/sales.ts), so this workflow ends either way.
 */
async function refundWindow(sessionPublicId: string, signalledAt: number): Promise<void> {
  const sale = await checkoutSaleOf({ sessionPublicId });
  if (!sale) return;
  showBusinessStatus('refund_window');
  const paidAt = typeof sale.paidAgoMs === 'number' ? Date.now() - sale.paidAgoMs : signalledAt;
  await sleep(Math.max(1, paidAt + SERVICE_REFUND_WINDOW_MS - Date.now()), { summary: 'the 30-day refund window' });
  if (patched(PATCHES.checkoutWindowSingleCall.patchId)) {
    await makeServiceCommissionPayable({ orderId: sale.orderId, at: new Date().toISOString() });
  } else {
    // Runs that waited for a booking a day at a time before this patch keep doing so as they replay.
    while ((await makeServiceCommissionPayable({ orderId: sale.orderId, at: new Date().toISOString() })) === 'not_booked') {
      await sleep('1 day', { summary: 'the transfer is still under way: the sale is not booked yet' });
    }
  }
  showBusinessStatus('complete');
}

// Worker Versioning: ends within weeks (its 7 days, then a paid sale's 30-day window): it stays on
// the worker version that started it, as the referral window does (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('PINNED'), checkoutSessionWorkflow);
