/** Operators' commands on orders: the outcome of a live transfer carried out by hand (CONTRACT §12). */
import { configuredStarter } from '../temporal/start';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import type { Config } from '../config';
import { Order } from '../db/entities/order';
import { loadOrderView, type OrderView } from '../orders/order-view';
import { orderWorkflowId, transferOutcomeUpdate, type TransferOutcome } from '../../workflows/messages';
import { withTemporal } from './temporal';
import { ApiError } from '../api/errors';
import { refundOrder } from '../orders/refund-requests';
import type { RefundView } from '../orders/refunds';

/**
 * Sends the recordTransferOutcome Update (the same one the Temporal UI sends) and answers the
 * order once its workflow has applied it. A refusal by the workflow's validator (the order does
 * not wait for an operator) is an error with the workflow's reason.
 */
export async function recordTransferOutcome(config: Config, dataSource: DataSource, publicId: string, outcome: TransferOutcome): Promise<OrderView> {
  const orders = dataSource.getRepository(Order);
  if (!(await orders.existsBy({ publicId }))) throw new Error(`no order ${publicId}`);
  await withTemporal(config, async (client) => {
    try {
      await client.workflow.getHandle(orderWorkflowId(publicId)).executeUpdate(transferOutcomeUpdate, { args: [outcome] });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) throw new Error(err.cause.message);
      if (err instanceof WorkflowNotFoundError) throw new Error(`order ${publicId} is not waiting for an operator: its fulfilment has ended`);
      throw err;
    }
  });
  return loadOrderView(dataSource.manager, await orders.findOneByOrFail({ publicId }));
}

/**
 * `admin order refund`: the service refunds a service-collected sale (CONTRACT §12). Before the
 * transfer completes it is the same decision as a partner's refund (the order's workflow stops
 * the transfer first); after, within 30 days of payment, the sale is reversed in the ledger.
 * Answers the refund; asking again answers the same one.
 */
export async function refundByService(config: Config, dataSource: DataSource, publicId: string, reason: string | null): Promise<RefundView & { http_status: number }> {
  const order = await dataSource.getRepository(Order).findOneBy({ publicId });
  if (!order) throw new Error(`no order ${publicId}`);
  return withTemporal(config, async (client) => {
    try {
      const answer = await refundOrder({ dataSource, workflows: configuredStarter(client, config.temporal) }, order, reason, 'service');
      return { ...answer.refund, http_status: answer.status };
    } catch (err) {
      // The message alone for the operator; the error kept as its cause (the audit trail tells a refusal from a breakdown by it).
      if (err instanceof ApiError) throw new Error(err.message, { cause: err });
      throw err;
    }
  });
}
