/** Telling a partner's `partner-onboarding:<application id>` workflow what its row already says (src/partners/onboarding.ts). */
import { WorkflowNotFoundError } from '@temporalio/client';
import { applicationVerifiedSignal, liveAccessDecidedSignal, liveAccessRequestedSignal, onboardingWorkflowId, type OnboardingDecision } from '../../workflows/messages';
import { IsNull, type DataSource } from 'typeorm';
import { PartnerApplication } from '../db/entities/partner-application';
import { startWorkflow, type WorkflowStarter } from '../temporal/start';

/** Starts the application's workflow (once) and marks it started; one left unmarked is started by the recovery sweep. */
export async function startOnboarding(workflows: WorkflowStarter, dataSource: DataSource, applicationId: string, stage: 'applied' | 'live_requested', company: string): Promise<void> {
  await startWorkflow(workflows, 'partnerOnboardingWorkflow', {
    workflowId: onboardingWorkflowId(applicationId),
    args: [{ applicationId, stage }],
    mode: 'once',
    summary: `Onboarding of ${company.slice(0, 80)}`,
    details: `Application ${applicationId}: applied → verified → live requested → approved | rejected (admin partner applications).`,
  });
  await dataSource.getRepository(PartnerApplication).update({ id: applicationId, workflowStartedAt: IsNull() }, { workflowStartedAt: () => 'now()' });
}

/** Applications whose workflow was never started (their page's process died after the commit), a minute on; at most 100. */
export async function unstartedOnboardings(dataSource: DataSource): Promise<Array<{ id: string; stage: 'applied' | 'live_requested'; company: string }>> {
  const rows = await dataSource
    .getRepository(PartnerApplication)
    .createQueryBuilder('a')
    .where("a.workflow_started_at IS NULL AND a.status IN ('applied', 'verified', 'live_requested') AND a.created_at < now() - interval '1 minute'")
    .orderBy('a.created_at')
    .limit(100)
    .getMany();
  return rows.map((a) => ({ id: a.id, stage: a.status === 'live_requested' ? 'live_requested' : 'applied', company: a.companyName }));
}

export type OnboardingNews = 'verified' | 'live_requested' | OnboardingDecision;

/** Signals the workflow; one that has ended (or never started, for old rows) has nothing to hear. */
export async function tellOnboarding(workflows: WorkflowStarter, applicationId: string, news: OnboardingNews): Promise<void> {
  const handle = workflows.client.workflow.getHandle(onboardingWorkflowId(applicationId));
  try {
    if (news === 'verified') await handle.signal(applicationVerifiedSignal);
    else if (news === 'live_requested') await handle.signal(liveAccessRequestedSignal);
    else await handle.signal(liveAccessDecidedSignal, news);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}
