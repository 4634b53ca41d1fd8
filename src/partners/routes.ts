/** Asking for live access (CONTRACT §16): POST /api/partner/v1/live-access with a sandbox credential. */
import type { DataSource } from 'typeorm';
import type { Logger } from 'pino';
import { ApiError } from '../api/errors';
import { defineRoute, type RouteSpec } from '../api/route';
import { z } from '../api/schemas';
import { SCOPES } from '../auth/scopes';
import type { WorkflowStarter } from '../temporal/start';
import { requestLiveAccess } from './onboarding';
import { startOnboarding, tellOnboarding } from './onboarding-flow';

export function onboardingRoutes(deps: { dataSource: DataSource; workflows: WorkflowStarter; logger: Logger }): RouteSpec[] {
  return [
    defineRoute({
      operationId: 'requestLiveAccess',
      method: 'post',
      path: '/api/partner/v1/live-access',
      scopes: SCOPES,
      tag: 'Partners',
      summary: 'Asks for live access; answers the request and the checklist the operators look at',
      description:
        'With any sandbox credential of the partner (a live one: 403 `sandbox_only`), no body. The first ask records the request for an operator\'s review; asked again, it answers the same request (`in_review`, then `approved` or `rejected`), its checklist as it is now: `sandbox_order_completed` (a sandbox order reached TRANSFER_COMPLETED), `webhook_endpoint_verified` (a sandbox webhook delivery was answered 2xx) and, for a partner that is not merchant of record, `sandbox_checkout_paid` (a sandbox hosted checkout was paid). An approval emails the partner\'s contact a link that shows the live credential once; a rejection emails the reason. A request waiting 2 days reminds the operators.',
      response: {
        status: 202,
        description: 'the request for live access, with its checklist',
        schema: z
          .object({
            status: z.enum(['in_review', 'approved', 'rejected']),
            checklist: z.array(z.object({ item: z.enum(['sandbox_order_completed', 'webhook_endpoint_verified', 'sandbox_checkout_paid']), done: z.boolean() })),
          })
          .openapi('LiveAccessRequest'),
      },
      errors: ['sandbox_only'],
      handler: async ({ auth }) => {
        if (auth.environment !== 'sandbox') throw new ApiError('sandbox_only', 'ask for live access with a sandbox credential: this one is already live');
        const answer = await requestLiveAccess(deps.dataSource, auth.partnerId, `credential ${auth.keyId}`);
        // The row is the request; the workflow's reminder follows it (a failed signal is sent again on the next ask).
        try {
          if (answer.workflow === 'start') await startOnboarding(deps.workflows, deps.dataSource, answer.applicationId, 'live_requested', `partner ${auth.partnerId}`);
          else if (answer.workflow === 'signal') await tellOnboarding(deps.workflows, answer.applicationId, 'live_requested');
        } catch (err) {
          deps.logger.warn({ err, application_id: answer.applicationId }, 'a live request was recorded, but its workflow could not be told now');
        }
        return { status: 202, body: { status: answer.status, checklist: answer.checklist } };
      },
    }),
  ];
}
