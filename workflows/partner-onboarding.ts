/**
 * One partner's onboarding (id `partner-onboarding:<application id>`, CONTRACT §16):
 *
 *   applied ──(the emailed link opened, within 24 h)──▶ verified: partner and sandbox credential
 *      │                                                   │ POST /live-access
 *      └─ 7 days unverified: expired                       ▼
 *                                       live requested ──(operator)──▶ approved | rejected
 *                                            └─ waiting 2 days: the operators are reminded
 *                                               (gauge partner_api_live_requests_overdue, alert)
 *
 * The application's row is the truth (the pages and the admin command change it under its lock);
 * the signals tell this workflow so its timers stop, and each timer's activity checks the row
 * first, so a lost signal never expires a verified application nor reminds of a decided request.
 */
import { condition, defineQuery, proxyActivities, setHandler, setWorkflowOptions } from '@temporalio/workflow';
import { onVersionedWorker } from './versioning';
import type { Activities } from '../activities';
import { applicationVerifiedSignal, liveAccessDecidedSignal, liveAccessRequestedSignal, type OnboardingDecision, type PartnerOnboardingInput } from './messages';

export const APPLICATION_EXPIRY_MS = 7 * 24 * 60 * 60 * 1000;
export const LIVE_REVIEW_REMINDER_MS = 2 * 24 * 60 * 60 * 1000;

export const onboardingStageQuery = defineQuery<string>('stage');

const acts = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export type OnboardingResult = 'expired' | OnboardingDecision;

export async function partnerOnboardingWorkflow(input: PartnerOnboardingInput): Promise<OnboardingResult> {
  let verified = input.stage === 'live_requested';
  let liveRequested = input.stage === 'live_requested';
  let decision: OnboardingDecision | undefined;
  let stage: string = input.stage ?? 'applied';
  setHandler(applicationVerifiedSignal, () => void (verified = true));
  setHandler(liveAccessRequestedSignal, () => void ((verified = true), (liveRequested = true)));
  setHandler(liveAccessDecidedSignal, (d) => void ((verified = true), (decision = d)));
  setHandler(onboardingStageQuery, () => stage);

  if (!(await condition(() => verified, APPLICATION_EXPIRY_MS, { summary: 'waiting for the emailed link (7 days)' }))) {
    // The row decides: a verification whose signal was lost carries on from where the row is.
    const status = await acts.expireApplication(input);
    if (status === 'expired') return 'expired';
    if (status === 'approved' || status === 'rejected') return status;
    liveRequested = status === 'live_requested';
  }
  stage = 'verified';
  await condition(() => liveRequested || decision !== undefined, undefined, { summary: 'sandbox: waiting for a request for live access' });
  stage = 'live_requested';
  if (!decision && !(await condition(() => decision !== undefined, LIVE_REVIEW_REMINDER_MS, { summary: 'waiting for an operator (2 days)' }))) {
    const status = await acts.remindOfLiveRequest(input);
    if (status === 'approved' || status === 'rejected') decision = status;
    stage = 'live_requested: operators reminded';
    await condition(() => decision !== undefined, undefined, { summary: 'waiting for an operator: reminded' });
  }
  stage = decision!;
  return decision!;
}

// Worker Versioning: a run may wait for weeks, so it moves to the current worker version (src/temporal/versioning.ts).
setWorkflowOptions(onVersionedWorker('AUTO_UPGRADE'), partnerOnboardingWorkflow);
