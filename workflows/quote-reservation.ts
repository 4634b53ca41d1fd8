/**
 * A quote's reservation (spec: "Quote reservation: 10 minutes"). Started when the quote is
 * created (id `quote:<quote_id>`); holds a 10-minute timer. If no order consumes the quote in
 * that time, the quote expires and its domain is listed again. An order ends the wait early with
 * the quoteConsumed signal; without the signal the expiry step finds the quote consumed and
 * leaves it alone, so the database row lock — not this signal — decides a race at minute ten.
 * A quote that lost its race before it was written is cancelled by the API: the run ends with
 * BusinessStatus not_taken.
 */
import { isCancellation, patched, proxyActivities, setHandler, setWorkflowOptions } from '@temporalio/workflow';
import { PATCHES } from './patches';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';
import { quoteConsumedSignal, type QuoteReservationInput } from './messages';
import { showBusinessStatus } from './business-status';
import { fastForwardable } from './fast-forward';

export const QUOTE_RESERVATION = '10 minutes';

const { expireQuote } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function quoteReservationWorkflow(input: QuoteReservationInput): Promise<'consumed' | 'expired' | 'absent'> {
  let consumed = false;
  setHandler(quoteConsumedSignal, () => {
    consumed = true;
  });
  // Sandbox fast-forward ends the 10 minutes now (CONTRACT §14).
  const fastForward = fastForwardable();
  showBusinessStatus('active');
  // The API cancels a reservation whose quote lost a race and was never written: an ordinary
  // end (BusinessStatus not_taken), not an incident as a termination would read.
  const notTaken = async (): Promise<'absent'> => {
    showBusinessStatus('not_taken');
    await fastForward.finish();
    return 'absent';
  };
  let ended: boolean;
  try {
    ended = await fastForward.wait('quote_expiry', () => consumed, QUOTE_RESERVATION, 'the 10-minute reservation');
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Runs before this patch ended here as they did (a fast-forward accepted in the same task failed with the run).
    if (patched(PATCHES.quoteCancelAnswersFastForward.patchId)) return notTaken();
    showBusinessStatus('not_taken');
    return 'absent';
  }
  if (ended) {
    showBusinessStatus('consumed');
    await fastForward.finish();
    return 'consumed';
  }
  let outcome: 'expired' | 'consumed' | 'absent';
  try {
    outcome = await expireQuote({ quotePublicId: input.quotePublicId });
  } catch (err) {
    // Cancelled as the wait ended (a fast-forward, or the 10 minutes, in the task that brought the
    // cancellation): not taken, as above; runs before this patch ended cancelled, and replay so.
    if (isCancellation(err) && patched(PATCHES.quoteCancelAnswersFastForward.patchId)) return notTaken();
    throw err;
  }
  showBusinessStatus(outcome);
  await fastForward.finish();
  return outcome;
}

// Worker Versioning: ends within days: it stays on the worker version that started it (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('PINNED'), quoteReservationWorkflow);
