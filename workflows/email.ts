/**
 * One email (id `email:<email id>`, CONTRACT §16): its sending is one activity, retried with
 * back-off (30 s doubling to 30 minutes) for 3 days while the mail server does not take it; then
 * it is marked failed for the operators. The activity sends an email already sent never again,
 * so whatever is retried (the activity, the workflow's start, the sweep's restart) it goes once.
 * The business step that queued it has committed long before: mail never holds up a sale.
 */
import { ActivityFailure, isCancellation, proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';
import type { EmailInput } from './messages';

export const EMAIL_RETRY_WINDOW_MS = 3 * 24 * 60 * 60 * 1000;

const sending = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  scheduleToCloseTimeout: EMAIL_RETRY_WINDOW_MS,
  retry: { initialInterval: '30 seconds', backoffCoefficient: 2, maximumInterval: '30 minutes' },
});

const bookkeeping = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function emailWorkflow(input: EmailInput): Promise<string> {
  try {
    return await sending.sendEmail(input);
  } catch (err) {
    if (isCancellation(err)) throw err;
    const reason = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : String(err);
    await bookkeeping.markEmailFailed({ ...input, error: `gave up after 3 days: ${reason}` });
    return 'failed';
  }
}

// Worker Versioning: one activity's retries, never continued as new: it stays on the version that started it.
setWorkflowOptions(onVersionedWorker('PINNED'), emailWorkflow);
