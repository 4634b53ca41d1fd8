import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';

/**
 * Between the items of an activity that can run past a minute: tells the server it is alive (its
 * heartbeat timeout then notices a dead worker in seconds, not at the start-to-close timeout) and
 * stops at once when the activity was cancelled (cancellation arrives with a heartbeat's answer).
 */
export function heartbeatOrStop(): void {
  const ctx = Context.current();
  ctx.heartbeat();
  if (ctx.cancellationSignal.aborted) throw new CancelledFailure('the activity was cancelled');
}
