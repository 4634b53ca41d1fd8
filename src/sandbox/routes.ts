/**
 * Sandbox fast-forward (CONTRACT §14): a partner ends an object's current wait now, as if its time
 * had passed, to test every timed path of its integration in seconds: a quote's 10 minutes, a
 * checkout session's 7 days, a referral sale's 30-day window, a brokerage case's next timer, an
 * order's 5-day transfer deadline. The object's workflow takes the fastForward update
 * (workflows/fast-forward.ts) and answers once the step the wait leads to is done, so the next
 * read shows the quote expired, the session expired, the commission accrued, the case moved on
 * or the order failed. Sandbox credentials only; the scope is the one that reads the object.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { ApiError } from '../api/errors';
import { defineRoute, type RouteSpec } from '../api/route';
import { z } from '../api/schemas';
import type { Scope } from '../auth/scopes';
import { BrokerageCase } from '../db/entities/brokerage-case';
import { CheckoutSession } from '../db/entities/checkout-session';
import { Order } from '../db/entities/order';
import { Quote } from '../db/entities/quote';
import { ReferralSale } from '../db/entities/referral';
import type { WorkflowStarter } from '../temporal/start';
import { caseWorkflowId } from '../../workflows/brokerage-messages';
import { checkoutWorkflowId, fastForwardUpdate, orderWorkflowId, quoteWorkflowId, referralWorkflowId } from '../../workflows/messages';

const OBJECTS = {
  quote: { scope: 'buy', entity: Quote, workflowId: quoteWorkflowId },
  checkout_session: { scope: 'embed', entity: CheckoutSession, workflowId: checkoutWorkflowId },
  order: { scope: 'buy', entity: Order, workflowId: orderWorkflowId },
  brokerage_case: { scope: 'broker', entity: BrokerageCase, workflowId: caseWorkflowId },
  referral_sale: { scope: 'report', entity: ReferralSale, workflowId: referralWorkflowId },
} as const satisfies Record<string, { scope: Scope; entity: unknown; workflowId: (id: string) => string }>;

type ObjectKind = keyof typeof OBJECTS;

export function sandboxRoutes(deps: { dataSource: DataSource; workflows: WorkflowStarter }): RouteSpec[] {
  return [
    defineRoute({
      operationId: 'sandboxFastForward',
      method: 'post',
      path: '/api/partner/v1/sandbox/fast-forward',
      scopes: ['buy', 'embed', 'broker', 'report'],
      tag: 'Sandbox',
      summary: "Ends a sandbox object's current wait now, as if its time had passed",
      description:
        "Sandbox credentials only (live: 403 `sandbox_only`). `object` and `id` name one of the partner's own objects (another partner's is 404): a `quote` expires, a `checkout_session` expires, a `referral_sale`'s 30-day window ends (its commission accrues), a `brokerage_case`'s next timer fires (a follow-up, the close after 30 quiet days, the reopen of an unpaid agreement), an `order` waiting on its transfer reaches its 5-day deadline (TRANSFER_FAILED; use the sandbox input `stall_transfer` to keep one waiting). The answer comes once that step is done, so the next read shows it. 409 `conflict` when the object waits on nothing (already consumed, paid, final). Scope: the one that reads the object: `buy` for quotes and orders, `embed` for sessions, `broker` for cases, `report` for referral sales.",
      body: z.object({
        object: z.enum(Object.keys(OBJECTS) as [ObjectKind, ...ObjectKind[]]),
        id: z.string().min(1).max(100).openapi({ example: 'quo_3f9a1c2b7d4e5f60a1b2c3d4' }),
      }),
      response: {
        status: 200,
        description: 'which wait ended',
        schema: z
          .object({
            object: z.string(),
            id: z.string(),
            fired: z.enum(['quote_expiry', 'session_expiry', 'referral_window', 'brokerage_timer', 'transfer_deadline']).openapi({ description: 'the wait that ended' }),
          })
          .openapi('FastForward'),
      },
      errors: ['validation_error', 'sandbox_only', 'not_found', 'conflict'],
      // Before the body is looked at: a live credential hears it whatever it sent.
      precondition: async (auth) => {
        if (auth.environment !== 'sandbox') throw new ApiError('sandbox_only', 'fast-forward works with sandbox credentials only');
      },
      handler: async ({ body, auth }) => {
        const kind = OBJECTS[body.object];
        if (!auth.scopes.includes(kind.scope)) throw new ApiError('forbidden', `this credential lacks the ${kind.scope} scope, which reads a ${body.object}`);
        const found = await deps.dataSource.getRepository(kind.entity as typeof Quote).existsBy({ publicId: body.id, partnerId: auth.partnerId, environment: 'sandbox' });
        if (!found) throw new ApiError('not_found', `no ${body.object} ${body.id}`);
        try {
          const fired = await deps.workflows.client.workflow.getHandle(kind.workflowId(body.id)).executeUpdate(fastForwardUpdate);
          return { body: { object: body.object, id: body.id, fired } };
        } catch (err) {
          // The validator refused (it waits on nothing now), or its workflow has ended.
          if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) {
            throw new ApiError('conflict', `${body.object} ${body.id} waits on nothing now: nothing to fast-forward`);
          }
          throw err;
        }
      },
    }),
  ];
}

