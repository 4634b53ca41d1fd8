/**
 * A quote's reservation (spec: "Quote reservation: 10 minutes"). Started when the quote is
 * created (id `quote:<quote_id>`); holds a 10-minute timer. If no order consumes the quote in
 * that time, the quote expires and its domain is listed again. An order ends the wait early with
 * the quoteConsumed signal; without the signal the expiry step finds the quote consumed and
 * leaves it alone, so the database row lock — not this signal — decides a race at minute ten.
 */
import { condition, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { quoteConsumedSignal, type QuoteReservationInput } from './messages';
import { BusinessStatus } from './search-attributes';

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
  upsertSearchAttributes([{ key: BusinessStatus, value: 'active' }]);
  if (await condition(() => consumed, QUOTE_RESERVATION)) {
    upsertSearchAttributes([{ key: BusinessStatus, value: 'consumed' }]);
    return 'consumed';
  }
  const outcome = await expireQuote({ quotePublicId: input.quotePublicId });
  upsertSearchAttributes([{ key: BusinessStatus, value: outcome }]);
  return outcome;
}
