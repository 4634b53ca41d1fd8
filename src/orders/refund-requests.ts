/**
 * POST /refunds: the API asks the order's fulfilment workflow (the `refund` Update) and answers
 * from its decision. Only two cases are settled here without it: an order that already has its
 * refund (200, the same refund), and an order whose workflow has ended with TRANSFER_FAILED (the
 * name was already released by the failure, so the refund touches nothing but money).
 *
 * The wait is bounded (REFUND_DECISION_WAIT_MS). When the decision takes longer (a registrar
 * slow to confirm a cancellation, or an operator who has to act on a live transfer), the answer
 * is 202 with the refund `pending`; the outcome follows as `order.refunded` (or the order
 * completing), and asking again attaches to the same decision, never a second refund.
 */
import { WorkflowNotFoundError } from '@temporalio/common';
import { WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { ApiError } from '../api/errors';
import type { Order } from '../db/entities/order';
import { publicId } from '../ids';
import { notifyEventsAppended } from '../webhooks/notify';
import { fulfilmentStateQuery, ORDER_ENDED, orderWorkflowId, REFUND_NOT_ALLOWED, REFUND_UPDATE_ID, refundUpdate, type RefundDecision } from '../../workflows/messages';
import { findOrderRow, markWorkflowStarted } from './orders';
import { findRefund, grantRefund, refundCompletedSale, RefundNotAllowed, refundView, type RefundView } from './refunds';
import { startOrderFulfilment } from './start-workflows';
import type { WorkflowStarter } from '../temporal/start';
import { refundBuyerCardOrLeave, type CardRefundDeps } from '../checkout/card-refunds';
import { databaseNow } from '../db/clock';

/** How long POST /refunds waits for the workflow's decision before answering 202 `pending`. */
export const REFUND_DECISION_WAIT_MS = 20_000;

export interface RefundAnswer {
  status: 200 | 201 | 202;
  refund: RefundView;
}

interface Deps extends CardRefundDeps {
  workflows: WorkflowStarter;
}

/**
 * Who asks: a partner refunds its partner-collected orders (POST /refunds), only before
 * completion; the service refunds service-collected sales (`admin order refund`), also after
 * completion within the refund window, by reversing the booked sale.
 */
export type RefundBy = 'partner' | 'service';

export async function requestRefund(deps: Deps, input: { partnerId: string; environment: Environment; orderPublicId: string; reason: string | null }): Promise<RefundAnswer> {
  const order = await findOrderRow(deps.dataSource.manager, input.partnerId, input.environment, input.orderPublicId);
  if (!order) throw new ApiError('not_found', `no order ${input.orderPublicId}`);
  return refundOrder(deps, order, input.reason, 'partner');
}

export async function refundOrder(deps: Deps, order: Order, reason: string | null, by: RefundBy): Promise<RefundAnswer> {
  const input = { partnerId: order.partnerId, environment: order.environment, orderPublicId: order.publicId, reason };
  const settled = await settledWithoutWorkflow(deps, order, input.reason, by);
  if (settled) return settled;

  if (!order.workflowStarted) {
    await startOrderFulfilment(deps.workflows, { orderId: order.id, orderPublicId: order.publicId, partnerId: order.partnerId, environment: order.environment, domain: order.domain, ...(order.paymentModel === 'service_collected' ? { serviceCollected: true } : {}) });
    await markWorkflowStarted(deps.dataSource, order.id);
  }
  const handle = deps.workflows.client.workflow.getHandle(orderWorkflowId(order.publicId));
  const refundPublicId = publicId('ref');
  let accepted = false;
  const asking = (async () => {
    const update = await handle.startUpdate(refundUpdate, { args: [{ refundPublicId, reason: input.reason }], updateId: REFUND_UPDATE_ID, waitForStage: WorkflowUpdateStage.ACCEPTED });
    accepted = true;
    return update.result();
  })();
  asking.catch(() => undefined); // still awaited below unless the wait runs out first

  let decision: RefundDecision | 'waited';
  try {
    decision = await Promise.race([asking, new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), REFUND_DECISION_WAIT_MS).unref())]);
  } catch (err) {
    const failure = err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure ? err.cause : undefined;
    if (failure?.type === REFUND_NOT_ALLOWED) throw new ApiError('refund_not_allowed', failure.message);
    if (failure?.type === ORDER_ENDED || err instanceof WorkflowNotFoundError) {
      const now = await findOrderRow(deps.dataSource.manager, input.partnerId, input.environment, input.orderPublicId);
      const after = now && (await settledWithoutWorkflow(deps, now, input.reason, by));
      if (after) return after;
      throw new ApiError('conflict', `fulfilment of order ${order.publicId} was stopped by an operator; its refund is decided by support`);
    }
    throw err;
  }

  if (decision === 'waited') {
    if (!accepted) throw new ApiError('service_unavailable', `the fulfilment of order ${order.publicId} did not take the request within ${REFUND_DECISION_WAIT_MS / 1000} s; ask again`);
    const state = await handle.query(fulfilmentStateQuery);
    return {
      status: 202,
      refund: {
        refund_id: state.refund!.refundPublicId,
        order_id: order.publicId,
        status: 'pending',
        amount_cents: order.salePriceCents,
        currency: order.currency,
        reason: state.refund!.reason,
        created_at: state.refund!.requestedAt,
      },
    };
  }
  if (!decision.granted) throw new ApiError('refund_not_allowed', decision.reason);
  const refund = await findRefund(deps.dataSource.manager, order.id);
  if (!refund) throw new Error(`order ${order.publicId}: refund granted but not recorded`);
  return { status: decision.refundPublicId === refundPublicId ? 201 : 200, refund: refundView(refund, order.publicId) };
}

/** The answers that need no workflow: an existing refund, a refusal the order's status decides, a failed order. */
async function settledWithoutWorkflow(deps: Deps, order: Order, reason: string | null, by: RefundBy): Promise<RefundAnswer | undefined> {
  const existing = await findRefund(deps.dataSource.manager, order.id);
  if (existing) {
    // Asking again finishes what a crash may have cut short: the buyer's card refunded once.
    if (by === 'service') await refundBuyerCardOrLeave(deps, order.id);
    return { status: 200, refund: refundView(existing, order.publicId) };
  }
  if (by === 'partner' && order.paymentModel !== 'partner_collected') {
    throw new ApiError('refund_not_allowed', 'a service-collected sale is refunded by the service, not through this endpoint');
  }
  if (by === 'service' && order.paymentModel !== 'service_collected') {
    throw new ApiError('refund_not_allowed', `order ${order.publicId} is partner-collected: its partner refunds it (POST /refunds)`);
  }
  if (by === 'service' && order.status === 'TRANSFER_COMPLETED') {
    const reversed = await refundCompletedSale(deps.dataSource, order.id, reason, await databaseNow(deps.dataSource.manager));
    await refundBuyerCardOrLeave(deps, order.id);
    await notifyEventsAppended(deps.dataSource, deps.workflows, order.partnerId, order.environment);
    return { status: reversed.created ? 201 : 200, refund: reversed.refund };
  }
  if (order.status === 'TRANSFER_COMPLETED') {
    throw new ApiError('refund_not_allowed', `order ${order.publicId} reached TRANSFER_COMPLETED; refunds are possible only before that`);
  }
  if (order.status !== 'TRANSFER_FAILED') return undefined;
  try {
    const granted = await grantRefund(deps.dataSource, { orderId: order.id, refundPublicId: publicId('ref'), reason, at: (await databaseNow(deps.dataSource.manager)).toISOString() });
    await refundBuyerCardOrLeave(deps, order.id);
    await notifyEventsAppended(deps.dataSource, deps.workflows, granted.event.partnerId, granted.event.environment);
    return { status: granted.created ? 201 : 200, refund: granted.refund };
  } catch (err) {
    if (err instanceof RefundNotAllowed) throw new ApiError('refund_not_allowed', err.message);
    throw err;
  }
}
